// The official AG-UI client (@ag-ui/client, HttpAgent) against agentflow's AG-UI endpoint.
//
// Usage: node client.mjs BASE_URL TOKEN   (NODE_PATH names the node_modules holding @ag-ui/client)
//
// BASE_URL serves the desk at /agui/desk and a flow `ui` whose agent calls the front-end tool
// `confirm_address`. The client validates every event sequence itself (it throws on an event
// out of order). Drives a plain turn, a refund that waits for approval (interrupt outcome)
// answered with `resume`, a front-end tool answered with a tool message, and the shared state
// (session values) both ways. Prints one line
// per check and "AG-UI CLIENT OK"; exits non-zero on the first failure.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || ".", "noop.js"));
const { HttpAgent } = require("@ag-ui/client");

const [base, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

function check(what, ok, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? `: ${detail}` : ""}`);
  if (!ok) process.exit(1);
}

async function run(agent, params = {}) {
  const events = [];
  const result = await agent.runAgent(params, { onEvent: ({ event }) => { events.push(event); } });
  return { events, result, types: events.map((e) => e.type) };
}

function say(agent, text) {
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
}

// A plain turn.
const desk = new HttpAgent({ url: `${base}/agui/desk`, headers });
say(desk, "Hello there");
let r = await run(desk);
check("turn: starts and ends", r.types[0] === "RUN_STARTED" && r.types.at(-1) === "RUN_FINISHED", r.types.join(","));
check("turn: state snapshot of the agent", r.events.some((e) => e.type === "STATE_SNAPSHOT" && e.snapshot.agentflow.agent === "triage"));
check("turn: text message", r.types.includes("TEXT_MESSAGE_START") && r.types.includes("TEXT_MESSAGE_CONTENT") && r.types.includes("TEXT_MESSAGE_END"));
check("turn: the answer is in the messages", desk.messages.some((m) => m.role === "assistant" && m.content === "Hello! I can help with refunds and complaints."));
check("turn: success outcome with the answer", r.events.at(-1).outcome?.type === "success" && r.events.at(-1).result === "Hello! I can help with refunds and complaints.");

// A refund: triage transfers, refund calls tools, the approval interrupts.
say(desk, "I want a refund for my kettle");
r = await run(desk);
const transfer = r.events.find((e) => e.type === "CUSTOM" && e.name === "agentflow.transfer");
check("refund: the transfer is a custom event", transfer?.value.to === "refund", JSON.stringify(transfer?.value));
check("refund: the agent change is a state delta", r.events.some((e) => e.type === "STATE_DELTA") && desk.state.agentflow.agent === "refund", JSON.stringify(desk.state));
check("refund: tool calls and results", r.types.includes("TOOL_CALL_START") && r.types.includes("TOOL_CALL_ARGS") && r.types.includes("TOOL_CALL_END") && r.types.includes("TOOL_CALL_RESULT"));
const callIds = r.events.filter((e) => e.type === "TOOL_CALL_START").map((e) => e.toolCallId);
check("refund: tool call ids unique within the run", callIds.length >= 3 && new Set(callIds).size === callIds.length, callIds.join(","));
const seenCalls = desk.messages.flatMap((m) => m.toolCalls ?? []).map((c) => c.function.name);
check("refund: the client keeps every call, the transfer too", seenCalls.includes("transfer_to_agent") && seenCalls.includes("lookup_order") && seenCalls.includes("issue_refund"), seenCalls.join(","));
const finished = r.events.at(-1);
check("refund: interrupt outcome", finished.type === "RUN_FINISHED" && finished.outcome?.type === "interrupt", JSON.stringify(finished.outcome));
const interrupt = finished.outcome.interrupts[0];
check("refund: the approval question", interrupt.message === "Approve a refund of 39.00 EUR for order 42?", interrupt.message);
r = await run(desk, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approve: true } }] });
check("approval: success", r.events.at(-1).outcome?.type === "success", r.types.join(","));
check("approval: the refund is paid", r.events.at(-1).result === "Done: 39 EUR for order 42 are on their way back to you.", r.events.at(-1).result);

// A front-end tool: the agent calls it, the client answers with a tool message.
const ui = new HttpAgent({ url: `${base}/agui/ui`, headers });
say(ui, "Ship my order");
const tools = [{ name: "confirm_address", description: "Asks the customer to confirm the address.", parameters: { type: "object", properties: {} } }];
r = await run(ui, { tools });
const call = r.events.find((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "confirm_address");
check("front-end tool: called", call !== undefined, r.types.join(","));
check("front-end tool: pending at the end", r.events.at(-1).outcome?.type === "success" && r.events.at(-1).outcome.pendingToolCallIds?.includes(call.toolCallId), JSON.stringify(r.events.at(-1).outcome));
ui.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: call.toolCallId, content: "221B Baker Street" });
r = await run(ui, { tools });
check("front-end tool: answered", r.events.at(-1).result === "Shipping to 221B Baker Street.", `${r.events.at(-1).result} ${r.types.join(",")}`);

// A front-end tool given at run time only: the agent has no tool of its own.
const shop = new HttpAgent({ url: `${base}/agui/shop`, headers });
say(shop, "Ship my order");
r = await run(shop, { tools });
const asked = r.events.find((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "confirm_address");
check("run-time tool: the model calls it", asked !== undefined && r.events.at(-1).outcome?.pendingToolCallIds?.includes(asked.toolCallId), r.types.join(","));
shop.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: asked.toolCallId, content: "10 Downing Street" });
r = await run(shop, { tools });
check("run-time tool: answered", r.events.at(-1).result === "Shipping to 10 Downing Street.", `${r.events.at(-1).result} ${r.types.join(",")}`);

// A front-end tool called by a scripted model after a transfer whose call had the same model
// id: the ids go out unique, and the answer under the id the call went out with resumes it.
const relay = new HttpAgent({ url: `${base}/agui/relay`, headers });
say(relay, "Ship my order");
r = await run(relay, { tools });
const starts = r.events.filter((e) => e.type === "TOOL_CALL_START");
check("relay: the transfer and the front-end call", starts.map((e) => e.toolCallName).join(",") === "transfer_to_agent,confirm_address", starts.map((e) => e.toolCallName).join(","));
check("relay: their ids differ", starts[0].toolCallId !== starts[1].toolCallId, starts.map((e) => e.toolCallId).join(","));
const pending = r.events.at(-1).outcome?.pendingToolCallIds ?? [];
check("relay: the pending call is the id sent", pending.length === 1 && pending[0] === starts[1].toolCallId, JSON.stringify(pending));
relay.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: starts[1].toolCallId, content: "4 Privet Drive" });
r = await run(relay, { tools });
check("relay: answered under the sent id, the run goes on", r.events.at(-1).result === "Shipping to 221B Baker Street.", `${r.events.at(-1).result} ${r.types.join(",")}`);

// The shared state: the client's values reach the agents, their changes come back.
const visits = new HttpAgent({ url: `${base}/agui/visits`, headers, initialState: { name: "Ada" } });
say(visits, "hi");
r = await run(visits);
check("state: the snapshot holds the client's values", r.events.some((e) => e.type === "STATE_SNAPSHOT" && e.snapshot.name === "Ada"), JSON.stringify(r.events.find((e) => e.type === "STATE_SNAPSHOT")));
check("state: the agent's value arrives as a delta", visits.state.visits === 1 && r.events.at(-1).result === "Hello Ada, visit 1.", JSON.stringify(visits.state));
say(visits, "again");
r = await run(visits);
check("state: sent back, it carries over to the next run", visits.state.visits === 2 && r.events.at(-1).result === "Hello Ada, visit 2.", JSON.stringify(visits.state));

console.log("AG-UI CLIENT OK");
