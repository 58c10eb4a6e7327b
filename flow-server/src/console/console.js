// agentflow console: talks to this server's /v1 API. No dependencies, no build step.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = {
  token: sessionStorage.getItem("agentflow-token") || "",
  flow: "",
  tree: null,
  busy: false,
  visited: new Set(),
  active: "",
  failed: "", // the agent whose error ended the turn, drawn red
  lastAgent: "",
  waiting: false, // the thread waits for an approval or a stopped run: no new message
  run: null, // the run followed: {id, last (event id), thread, message?}
  abort: null, // stops following it (the run goes on on the server)
  shownTurns: new Set(), // "turn:resumed" of the records the page shows
  flows: [], // the served flows' names
  // What the signed-in principal may do (GET /v1/me); Approve buttons need `approve`.
  scopes: [],
  forkStep: null, // the step a fork made inside a turn waits at, until its owner continues it
  planCalls: new Map(), // call id -> the plan a `write_plan` call wrote, until its result says saved
};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) {
    if (c !== null && c !== undefined) node.append(c);
  }
  return node;
}

// Whether the signed-in principal has `scope` (`admin` has every scope).
function may(scope) {
  return state.scopes.includes(scope) || state.scopes.includes("admin");
}

// Whether it may see the approvals queue (every thread of the flow that waits for a human).
function mayQueue() {
  return may("read") || may("approve");
}

function currentThread() {
  return $("#thread").value.trim();
}

function setStatus(text, kind) {
  const s = $("#status");
  s.textContent = text;
  s.className = kind || "";
}

function randomThread() {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  return "t-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// ---- HTTP ----------------------------------------------------------------------------------

async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = Object.assign({}, opts.headers || {});
  if (state.token) opts.headers["Authorization"] = "Bearer " + state.token;
  if (opts.json !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(opts.json);
    delete opts.json;
  }
  const response = await fetch("v1" + path, opts);
  if (response.status === 401) {
    $("#auth").hidden = false;
    setStatus("a token is needed", "error");
    throw new Error("unauthorized");
  }
  return response;
}

// An error's public text: its message, and the correlation id an operator finds it by.
function publicText(error) {
  return error.correlation_id ? error.message + " (ref " + error.correlation_id + ")" : error.message;
}

// Reads a text/event-stream response, calling onEvent(name, data, id) per event (`id`: the
// event's id, null without one).
async function readSse(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      let id = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "event") name = val;
        else if (field === "data") data.push(val);
        else if (field === "id") id = val;
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")), id);
    }
  }
}

// ---- the tree ------------------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function drawTree() {
  const host = $("#tree");
  host.textContent = "";
  if (!state.tree) return;
  const W = 118, H = 34, GAPX = 16, GAPY = 58;
  const nodes = [];
  let nextX = 0, maxDepth = 0;
  (function place(n, depth, parent) {
    const me = { n, depth, parent, x: 0 };
    nodes.push(me);
    maxDepth = Math.max(maxDepth, depth);
    if (!n.children.length) {
      me.x = nextX;
      nextX += W + GAPX;
    } else {
      const kids = n.children.map((c) => place(c, depth + 1, me));
      me.x = (kids[0].x + kids[kids.length - 1].x) / 2;
    }
    return me;
  })(state.tree, 0, null);
  const width = Math.max(nextX - GAPX, W) + 8, height = (maxDepth + 1) * (H + GAPY) - GAPY + 8;
  const root = svg("svg", { viewBox: `-4 -4 ${width} ${height}`, role: "img", "aria-label": "tree of agents" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a93a6" }));
  defs.append(marker);
  root.append(defs);
  const y = (d) => d * (H + GAPY);
  for (const m of nodes) {
    if (!m.parent) continue;
    const line = svg("line", {
      class: "edge",
      x1: m.parent.x + W / 2, y1: y(m.parent.depth) + H,
      x2: m.x + W / 2, y2: y(m.depth),
      "marker-end": "url(#arrow)",
    });
    if (!m.n.no_parent) line.setAttribute("marker-start", "url(#arrow)");
    root.append(line);
  }
  for (const m of nodes) {
    const cls = ["node"];
    if (state.failed === m.n.name) cls.push("failed");
    else if (state.active === m.n.name) cls.push("active");
    else if (state.visited.has(m.n.name)) cls.push("visited");
    const g = svg("g", { class: cls.join(" "), "data-agent": m.n.name, transform: `translate(${m.x},${y(m.depth)})` });
    const title = svg("title");
    title.textContent = m.n.name + (m.n.description ? ": " + m.n.description : "");
    g.append(title, svg("rect", { width: W, height: H, rx: 6 }));
    const text = svg("text", { x: W / 2, y: H / 2 });
    text.textContent = m.n.name;
    g.append(text);
    root.append(g);
  }
  host.append(root);
}

function markActive(path) {
  const agent = path.length ? path[path.length - 1] : "";
  for (const a of path) state.visited.add(a);
  state.active = agent;
  drawTree();
}

// ---- chat, timeline, approvals -------------------------------------------------------------

function chatMessage(role, text, who) {
  const bubble = el("div", { class: "msg " + role }, who ? el("span", { class: "who" }, who) : null, el("span", { class: "text" }, text));
  $("#chat").append(bubble);
  bubble.scrollIntoView({ block: "end" });
  return bubble;
}

function timeline(kind, path, label, detail) {
  const item = el("li", { "data-kind": kind },
    path ? el("span", { class: "run-path" }, path.join("/")) : null,
    el("span", { class: "kind" }, label),
    detail ? el("span", { class: "detail" }, detail) : null);
  $("#timeline").append(item);
  item.scrollIntoView({ block: "end" });
  return item;
}

// The agent's plan (the kit's `write_plan`, thread value `kit.plan`) beside the timeline: each
// step with its mark, `[x]` done, `[>]` in progress, `[ ]` pending. Hidden without a plan.
const PLAN_MARKS = { done: "[x]", in_progress: "[>]", pending: "[ ]" };

function showPlan(plan) {
  const host = $("#plan");
  host.textContent = "";
  const steps = plan && Array.isArray(plan.steps) ? plan.steps : [];
  $("#plan-section").hidden = steps.length === 0;
  for (const s of steps) {
    host.append(el("li", { "data-status": String(s.status) },
      el("span", { class: "mark" }, PLAN_MARKS[s.status] || "[?]"), " ", String(s.step)));
  }
}

// The thread's plan as its values hold it (GET .../state), for a thread opened or a turn ended.
async function refreshPlan() {
  if (!may("read")) return;
  const thread = currentThread();
  const response = await api(threadPath() + "/state");
  if (thread !== currentThread() || !response.ok) return;
  const { values } = await response.json();
  showPlan(values && values["kit.plan"]);
}

// A tool's progress in words: an MCP server's `{progress, total?, message?}` as "message
// (progress/total)", anything else as its fields.
function progressText(p) {
  if (p && typeof p === "object" && typeof p.progress === "number") {
    const count = p.total ? p.progress + "/" + p.total : String(p.progress);
    return p.message ? p.message + " (" + count + ")" : count;
  }
  if (p && typeof p === "object") return Object.entries(p).map(([k, v]) => k + ": " + (typeof v === "string" ? v : JSON.stringify(v))).join(", ");
  return typeof p === "string" ? p : JSON.stringify(p);
}

// Shows a tool's progress (`{"tool_progress": {tool, call_id, progress}}`, an event at the
// tool's run path) on the timeline row of its call, made if the page missed the call.
function showToolProgress(path, tp) {
  const caller = path.slice(0, -1);
  let row = null;
  for (const li of document.querySelectorAll("#timeline li[data-kind='tool-call']")) {
    if (li.dataset.callId === String(tp.call_id)) row = li;
  }
  if (!row) {
    row = timeline("tool-call", caller, "calls " + tp.tool);
    row.dataset.callId = String(tp.call_id);
  }
  let bar = row.querySelector(".progress");
  if (!bar) {
    bar = el("span", { class: "progress" });
    row.append(bar);
  }
  bar.textContent = progressText(tp.progress);
}

// Whether `i` is the mark of a turn stopped at a safe point (no human is asked anything).
function isStop(i) {
  return !!i.info && typeof i.info === "object" && Object.keys(i.info).length === 1 && typeof i.info.cancelled === "string";
}

// The arguments of the call an approval is about (`info.approval.arguments`, as the
// application lets approvers see them), one row a field.
function argumentsList(info) {
  const args = info && info.approval && info.approval.arguments;
  if (args === undefined || args === null) return null;
  const list = el("dl", { class: "arguments" });
  const entries = typeof args === "object" && !Array.isArray(args) ? Object.entries(args) : [["arguments", args]];
  for (const [k, v] of entries) {
    list.append(el("dt", {}, k), el("dd", {}, typeof v === "string" ? v : JSON.stringify(v)));
  }
  return list;
}

function showApprovals(all) {
  // A fork point asks nobody anything (its owner continues it); a stop neither.
  const interrupts = (all || []).filter((i) => !isStop(i) && i.id !== "fork_point");
  const host = $("#approvals");
  host.textContent = "";
  const count = $("#approval-count");
  count.textContent = String(interrupts.length);
  count.className = interrupts.length ? "badge waiting" : "badge";
  if (!interrupts.length) {
    host.append(el("p", { class: "muted" }, "Nothing waits for a human."));
    return;
  }
  for (const i of interrupts) {
    const question = (i.info && (i.info.question || i.info.message)) || JSON.stringify(i.info);
    // Entries of the queue name their flow and thread; those of a turn's end are the current
    // thread's.
    const thread = i.thread || currentThread();
    const flow = i.flow || state.flow;
    let buttons;
    if (may("approve")) {
      const approve = el("button", { class: "approve", type: "button" }, "Approve");
      const deny = el("button", { class: "deny", type: "button" }, "Deny");
      approve.addEventListener("click", () => resume(flow, thread, i.id, true));
      deny.addEventListener("click", () => resume(flow, thread, i.id, false));
      buttons = el("div", { class: "buttons" }, approve, deny);
    } else {
      buttons = el("p", { class: "muted" }, "Waiting for an approver.");
    }
    const where = (state.flows.length > 1 ? "flow " + flow + " · " : "") + "thread " + thread;
    const who = [];
    if (i.requested_by) who.push(el("span", { class: "requester" }, "asked by " + i.requested_by));
    const agent = i.agent || (i.address ? lastAgent(i.address) : "");
    if (agent) {
      if (who.length) who.push(" · ");
      who.push(el("span", { class: "agent" }, "agent " + agent));
    }
    host.append(el("div", { class: "approval", "data-interrupt": i.id, "data-thread": thread, "data-flow": flow },
      el("p", { class: "question" }, question),
      argumentsList(i.info),
      who.length ? el("p", { class: "who" }, ...who) : null,
      el("div", { class: "meta" }, where + " · interrupt " + i.id),
      buttons));
  }
}

// The innermost agent of an interrupt's address as text (`agent:A;tool:NAME:ID;agent:B`).
function lastAgent(address) {
  const agents = String(address).split(";").filter((f) => f.startsWith("agent:"));
  return agents.length ? agents[agents.length - 1].slice("agent:".length) : "";
}

// The approvals queue of every served flow when the principal may see it, else what the
// current thread waits on (`pending`, from the thread or from the end of its last turn).
async function refreshApprovals(pending) {
  if (!mayQueue()) {
    showApprovals(pending);
    return;
  }
  // The queue: what every thread of every served flow waits on, as far as the caller may see.
  const queue = [];
  try {
    for (const flow of state.flows) {
      const response = await api("/flows/" + encodeURIComponent(flow) + "/interrupts");
      if (!response.ok) continue;
      for (const i of (await response.json()).interrupts) queue.push(Object.assign({ flow }, i));
    }
  } catch (_) {
    showApprovals(pending);
    return;
  }
  showApprovals(queue);
}

// Who answered which interrupt of the thread, when, for whom (the thread's record).
function showAnswered(records) {
  const host = $("#answered");
  host.textContent = "";
  for (const r of records || []) {
    const asked = (r.asked && (r.asked.question || r.asked.message)) || JSON.stringify(r.asked);
    const answer = r.answered && typeof r.answered === "object" && "approve" in r.answered
      ? (r.answered.approve ? "approved" : "denied")
      : "answered " + JSON.stringify(r.answered);
    const who = answer + " by " + (r.by || "someone") +
      (r.requested_by ? " for " + r.requested_by : "") +
      " at " + new Date(r.at_ms).toLocaleString();
    host.append(el("li", { "data-interrupt": r.interrupt_id },
      el("span", { class: "question" }, asked), el("span", { class: "who" }, who)));
  }
}

// ---- runs -----------------------------------------------------------------------------------

// A friendly sentence for an error the API answered: the API's own wording (endpoints, settings)
// is for developers, not for the person chatting.
function friendly(error) {
  const code = error.code || "";
  const message = error.message || "";
  if (code === "busy") return "The assistant is still answering; wait until it has finished.";
  if (code === "conflict" && /waits for interrupt/.test(message)) {
    return "This conversation waits for an approval; it goes on once someone answers it.";
  }
  const plain = message
    .replace(/\s*\((?:POST|GET|DELETE|PUT)\b[^)]*\)/g, "")
    .replace(/\s*\([A-Z][A-Za-z]*::[A-Za-z_]+\)/g, "");
  return publicText(Object.assign({}, error, { message: plain }));
}

async function friendlyErrorText(response) {
  try {
    const body = await response.json();
    return body.error ? friendly(body.error) : response.statusText;
  } catch (_) {
    return response.status + " " + response.statusText;
  }
}

function showUsage(usage, bubble) {
  if (!usage || !(usage.input_tokens || usage.output_tokens)) return;
  const text = usage.input_tokens + " in · " + usage.output_tokens + " out";
  timeline("usage", null, "tokens", text);
  if (bubble) bubble.append(el("span", { class: "usage" }, "tokens: " + text));
}

function addUsage(total, usage) {
  if (!usage) return;
  total.input_tokens += usage.input_tokens || 0;
  total.output_tokens += usage.output_tokens || 0;
}

function turnLabel(turn, resumed) {
  // Turns count from 0, as the API numbers them.
  return resumed ? "turn " + turn + " resumed" : "turn " + turn;
}

// Handles the events of one run (a turn or a resume) as `POST .../runs` and
// `GET .../runs/{run}/stream` send them.
function runHandler(run) {
  const bubbles = new Map(); // run path -> the bubble being streamed
  const usage = { input_tokens: 0, output_tokens: 0 };
  let failed = false; // the run's error is shown once, whichever events carry it
  let skip = false; // the page already shows this run from the thread's timeline
  let lastAnswer = null;
  return (name, data) => {
    if (name === "turn") {
      run.id = data.run_id;
      if (data.resumed) run.inputShown = true;
      const key = data.turn + ":" + data.resumed;
      if (state.shownTurns.has(key)) {
        skip = true;
        run.inputShown = true;
        return;
      }
      state.shownTurns.add(key);
      const input = localStorage.getItem("agentflow-run-input:" + data.run_id);
      if (run.message !== undefined) {
        if (!data.resumed) localStorage.setItem("agentflow-run-input:" + data.run_id, run.message);
        run.inputShown = true;
      } else if (input !== null) {
        chatMessage("user", input);
        run.inputShown = true;
      }
      timeline("turn", null, turnLabel(data.turn, data.resumed), "starts at " + data.started_at.join("/"));
      refreshRuns();
      return;
    }
    if (name === "done") {
      localStorage.removeItem("agentflow-run-input:" + data.run_id);
    }
    if (skip) return;
    if (name === "chunk") {
      const key = data.run_path.join("/");
      let bubble = bubbles.get(key);
      if (!bubble) {
        bubble = chatMessage("assistant streaming", "", key);
        bubbles.set(key, bubble);
      }
      bubble.querySelector(".text").textContent += data.content;
      markActive(data.run_path);
    } else if (name === "event") {
      if (data.error) failed = true;
      if (data.message) addUsage(usage, data.message.usage);
      lastAnswer = onEvent(data, bubbles) || lastAnswer;
    } else if (name === "error") {
      // Without a code: the stream was open too long and ends; the page re-attaches.
      if (data.code) timeline("error", null, "error", friendly(data));
    } else if (name === "done") {
      state.active = "";
      if (data.status === "error") {
        if (!failed) chatMessage("error", publicText(data.error));
        timeline("error", null, "failed", "the turn was not recorded");
        state.failed = state.failed || state.lastAgent;
        drawTree();
        setStatus("failed", "error");
        return;
      }
      drawTree();
      showUsage(usage, lastAnswer);
      if (data.status === "interrupted") {
        timeline("done", null, "waiting for approval");
        setWaiting(true);
        refreshApprovals(data.interrupts);
        chatMessage("notice", "Waiting for a human to approve: see Approvals.");
        setStatus("waiting for approval");
      } else if (data.status === "cancelled") {
        const how = CANCEL_WORDS[data.cancel_mode] || (data.at_safe_point ? "at a safe point" : "at once");
        timeline("cancelled", null, "stopped " + how);
        const notice = chatMessage("notice", "Stopped " + how + ".");
        if (data.at_safe_point && may("chat")) {
          // The thread keeps what the turn finished: Continue goes on from there; a new
          // message starts from there too.
          const go = el("button", { type: "button", class: "continue" }, "Continue");
          go.addEventListener("click", () => continueRun(data.run_id));
          notice.append(go);
        }
        setStatus("stopped");
      } else {
        timeline("done", null, "finished");
        refreshApprovals([]);
        setStatus("finished");
      }
    }
  };
}

const CANCEL_WORDS = {
  immediate: "at once",
  after_model: "after the model's reply",
  after_tools: "after the tool calls",
};

// Renders one event; answers the chat bubble of an assistant's answer, if it made one.
function onEvent(e, bubbles) {
  const path = e.run_path;
  const key = path.join("/");
  const tp = e.custom && typeof e.custom === "object" ? e.custom.tool_progress : undefined;
  if (tp) {
    // Progress of a tool call: its caller is running; the tool is no agent of the tree.
    markActive(path.slice(0, -1));
    showToolProgress(path, tp);
    return null;
  }
  markActive(path);
  state.lastAgent = e.agent_name;
  let answer = null;
  const m = e.message;
  if (m) {
    if (m.role === "assistant") {
      const bubble = bubbles.get(key);
      bubbles.delete(key);
      if (bubble) {
        bubble.classList.remove("streaming");
        if (!m.content) bubble.remove();
        else answer = bubble;
      } else if (m.content) {
        answer = chatMessage("assistant", m.content, key);
      }
      if (m.content) timeline("message", path, "said", m.content);
      for (const call of m.tool_calls || []) {
        const row = timeline("tool-call", path, "calls " + call.name, call.arguments);
        row.dataset.callId = String(call.id);
        if (call.name === "write_plan") {
          try { state.planCalls.set(String(call.id), JSON.parse(call.arguments)); } catch (_) { /* not JSON: refused by the tool */ }
        }
      }
    } else if (m.role === "tool") {
      timeline("tool-result", path, (m.tool_name || "tool") + " returned", m.content);
      // A plan the tool saved (a refused one leaves the plan as it was).
      const written = state.planCalls.get(String(m.tool_call_id));
      if (m.tool_name === "write_plan" && written && (m.content || "").startsWith("Plan saved")) showPlan(written);
      state.planCalls.delete(String(m.tool_call_id));
    }
  }
  if (e.custom !== undefined) timeline("custom", path, "data", JSON.stringify(e.custom));
  const a = e.action;
  if (a === "exit") timeline("exit", path, "exit", m && m.role === "tool" ? m.content : "");
  else if (a && a.transfer_to_agent) timeline("transfer", path, "transfer → " + a.transfer_to_agent);
  else if (a && a.interrupted && isStop(a.interrupted)) timeline("cancelled", path, "stopped here");
  else if (a && a.interrupted) {
    const info = a.interrupted.info;
    timeline("interrupt", path, "interrupt " + a.interrupted.id, (info && info.question) || JSON.stringify(info));
  } else if (a && a.break_loop) timeline("transfer", path, "break loop");
  if (e.error) {
    timeline("error", path, "error", publicText(e.error));
    chatMessage("error", publicText(e.error), key);
    state.failed = e.agent_name;
    state.active = "";
    drawTree();
  }
  return answer;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Reads a run's SSE `response` to its `done`, re-attaching after the last event id it saw
// when the connection drops (the run goes on on the server meanwhile).
async function follow(response, run, signal) {
  const handle = runHandler(run);
  let ended = false;
  let silent = 0; // connections in a row that brought no event
  for (;;) {
    let heard = false;
    try {
      await readSse(response, (name, data, id) => {
        heard = true;
        if (id !== null) run.last = id;
        if (name === "done") ended = true;
        handle(name, data);
      });
    } catch (err) {
      if (signal.aborted) return false;
    }
    silent = heard ? 0 : silent + 1;
    if (ended || signal.aborted || !run.id || !may("read") || silent >= 10) break;
    await sleep(300);
    const headers = run.last !== null ? { "Last-Event-ID": String(run.last) } : {};
    try {
      response = await api(threadPath(run.thread) + "/runs/" + encodeURIComponent(run.id) + "/stream", { headers, signal });
    } catch (_) {
      if (signal.aborted) return false;
      continue;
    }
    if (!response.ok) break;
    // How many times the page re-attached (shown on the status for whoever watches closely).
    const status = $("#status");
    status.dataset.reattached = String(Number(status.dataset.reattached || 0) + 1);
  }
  return ended;
}

// Follows `run` of the current thread from `response` (or, without one, attaches to it from
// its first event), with the composer closed and the Stop button offered meanwhile.
async function watch(run, response) {
  const controller = new AbortController();
  state.abort = controller;
  state.run = run;
  setBusy(true);
  let ended = false;
  try {
    if (!response) {
      response = await api(threadPath(run.thread) + "/runs/" + encodeURIComponent(run.id) + "/stream", { signal: controller.signal });
      if (!response.ok) {
        setStatus(await friendlyErrorText(response), "error");
        return;
      }
    }
    ended = await follow(response, run, controller.signal);
    if (!ended && !controller.signal.aborted) {
      chatMessage("error", "connection lost: the turn goes on; reload the page to see it");
      setStatus("connection lost", "error");
    }
  } catch (err) {
    if (err.message !== "unauthorized" && !controller.signal.aborted) {
      chatMessage("error", "connection lost: " + err.message);
      setStatus("connection lost", "error");
    }
  } finally {
    if (state.abort === controller) {
      state.abort = null;
      state.run = null;
      setBusy(false);
      if (ended) {
        loadHistory();
        refreshRuns();
        refreshThreads();
        refreshMemory();
        refreshUsage();
        if (may("read")) refreshAnswered();
      }
    }
  }
  return ended;
}

// Starts a run of the current thread (`body`: a message or a resume) and follows it.
async function startRun(body, label, message) {
  setBusy(true);
  setStatus(label, "busy");
  const run = { id: null, last: null, thread: currentThread(), message };
  let response;
  try {
    response = await api(threadPath() + "/runs", {
      method: "POST",
      json: Object.assign({ stream: true, on_disconnect: "continue" }, body),
    });
  } catch (err) {
    setBusy(false);
    if (err.message !== "unauthorized") {
      chatMessage("error", "connection lost: " + err.message);
      setStatus("connection lost", "error");
    }
    return;
  }
  if (!response.ok) {
    const text = await friendlyErrorText(response);
    chatMessage("error", text);
    setStatus(text, "error");
    setBusy(false);
    return;
  }
  await watch(run, response);
}

// Asks the run going to stop, the way the Stop menu says.
async function stop() {
  const run = state.run;
  if (!run || !run.id) return;
  const mode = $("#cancel-mode").value;
  $("#stop").disabled = true;
  const response = await api(threadPath(run.thread) + "/runs/" + encodeURIComponent(run.id) + "/cancel", { method: "POST", json: { mode } });
  if (!response.ok) {
    $("#stop").disabled = false;
    setStatus(await friendlyErrorText(response), "error");
  } else if (state.run === run) {
    setStatus("stopping " + (CANCEL_WORDS[mode] || "") + "…", "busy");
  }
}

// Continues a run stopped at a safe point, as a new run.
async function continueRun(runId) {
  for (const b of document.querySelectorAll("#chat button.continue")) b.remove();
  const response = await api(threadPath() + "/runs/" + encodeURIComponent(runId) + "/resume", { method: "POST", json: {} });
  if (!response.ok) {
    setStatus(await friendlyErrorText(response), "error");
    return;
  }
  const next = await response.json();
  setWaiting(false);
  await watch({ id: next.run_id, last: null, thread: currentThread() });
}

// Whether the current thread waits (for an approval, or to continue a stopped run): the
// composer stays closed meanwhile.
function setWaiting(waiting) {
  state.waiting = waiting;
  updateComposer();
}

function setBusy(busy) {
  state.busy = busy;
  $("#stop-bar").hidden = !(busy && may("chat"));
  $("#stop").disabled = false;
  updateComposer();
}

function updateComposer() {
  const input = $("#message-input");
  const closed = state.busy || state.waiting || !may("chat");
  input.disabled = closed;
  $("#send").disabled = closed;
  input.placeholder = state.forkStep != null && state.waiting
    ? "Continue the fork (above), or fork at another step"
    : state.waiting
    ? "Waiting for an approval…"
    : state.busy
      ? "The assistant is answering…"
      : !may("chat")
        ? "You may read this conversation, not write in it"
        : "Write a message to " + (state.flow || "the assistant");
}

function threadPath(thread) {
  return "/flows/" + encodeURIComponent(state.flow) + "/threads/" + encodeURIComponent(thread || currentThread());
}

async function send(text) {
  state.visited.clear();
  state.failed = "";
  chatMessage("user", text);
  await startRun({ message: text }, "running…", text);
}

// Answers interrupt `interruptId` of `thread`; an entry of the queue may be another thread's,
// or another flow's, which the console then shows.
async function resume(flow, thread, interruptId, approve) {
  for (const b of document.querySelectorAll("#approvals button")) b.disabled = true;
  if (flow !== state.flow) {
    await loadFlow(flow, thread);
  } else if (thread !== currentThread()) {
    $("#thread").value = thread;
    await loadThread();
  }
  state.failed = "";
  timeline("turn", null, approve ? "approved" : "denied", interruptId);
  setWaiting(false);
  await startRun({ resume: { [interruptId]: { approve } } }, "resuming…");
}

async function refreshAnswered() {
  const response = await api(threadPath());
  if (response.ok) showAnswered((await response.json()).approvals);
}

// The current thread's runs this server remembers, with their status.
async function refreshRuns() {
  const host = $("#runs");
  if (!may("read")) return [];
  const thread = currentThread();
  let runs = [];
  try {
    const response = await api(threadPath(thread) + "/runs");
    if (response.ok) runs = (await response.json()).runs;
  } catch (_) {
    return [];
  }
  if (thread !== currentThread()) return runs;
  host.textContent = "";
  for (const r of runs) {
    host.append(el("li", { "data-run": r.run_id, "data-status": r.status },
      el("span", { class: "id" }, r.run_id.slice(0, 12)),
      el("span", { class: "status" }, r.status)));
  }
  if (!runs.length) host.append(el("li", { class: "muted" }, "none in this server"));
  return runs;
}

// The caller's threads of the flow, newest first; a click opens one.
async function refreshThreads() {
  const host = $("#threads");
  if (!may("read")) return;
  let threads = [];
  try {
    const response = await api("/flows/" + encodeURIComponent(state.flow) + "/threads");
    if (!response.ok) return;
    threads = (await response.json()).threads;
  } catch (_) {
    return;
  }
  host.textContent = "";
  for (const t of threads) {
    const meta = [t.turns + (t.turns === 1 ? " turn" : " turns")];
    if (t.running) meta.push("running");
    if (t.waiting) meta.push("waits for approval");
    const item = el("li", { "data-thread": t.thread, class: t.thread === currentThread() ? "current" : "" },
      el("span", { class: "id" }, t.thread), el("span", { class: "meta" }, meta.join(" · ")));
    item.addEventListener("click", () => openThread(t.thread));
    host.append(item);
  }
  if (!threads.length) host.append(el("li", { class: "muted" }, "no thread yet"));
}

async function openThread(thread) {
  if (thread === currentThread()) return;
  $("#thread").value = thread;
  await loadThread();
}

// ---- memory --------------------------------------------------------------------------------

// What the server remembers about the signed-in principal (its `user` memory scope, GET
// /v1/memory/items), the most recently updated first, each with a Delete button for a principal
// with `chat`. Hidden when the server keeps no memory (404) or the principal may not read it.
async function refreshMemory() {
  const section = $("#memory-section");
  if (!may("read") && !may("chat")) {
    section.hidden = true;
    section.dataset.state = "absent";
    return;
  }
  const items = [];
  let offset = 0;
  try {
    // A page at a time, at most 10 pages (1,000 items) on the page.
    for (let pages = 0; offset !== null && pages < 10; pages++) {
      const response = await api("/memory/items?scope=user&offset=" + offset);
      if (!response.ok) {
        // 404 `unknown_item`: this server keeps no memory.
        section.hidden = true;
        section.dataset.state = "absent";
        return;
      }
      const page = await response.json();
      items.push(...page.items);
      offset = page.next_offset == null ? null : page.next_offset;
    }
  } catch (_) {
    return;
  }
  items.sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)));
  const host = $("#memory");
  host.textContent = "";
  for (const item of items) {
    const said = item.text || (typeof item.value === "string" ? item.value : JSON.stringify(item.value));
    let forget = null;
    if (may("chat")) {
      forget = el("button", { class: "small forget", type: "button", title: "Forget this" }, "Delete");
      forget.addEventListener("click", () => forgetItem(item));
    }
    host.append(el("li", { "data-namespace": item.namespace, "data-key": item.key },
      el("span", { class: "address" }, item.namespace + " · " + item.key),
      el("span", { class: "text" }, said),
      el("span", { class: "when" }, "updated " + new Date(item.updated_at).toLocaleString()),
      forget));
  }
  if (!items.length) host.append(el("li", { class: "muted" }, "Nothing yet."));
  section.hidden = false;
  section.dataset.state = "shown";
}

// Deletes one item of the principal's memory, then shows what is left.
async function forgetItem(item) {
  const query = new URLSearchParams({ scope: "user", namespace: item.namespace, key: item.key });
  const response = await api("/memory/item?" + query.toString(), { method: "DELETE" });
  if (!response.ok) {
    setStatus(await friendlyErrorText(response), "error");
    return;
  }
  await refreshMemory();
}

// ---- usage ---------------------------------------------------------------------------------

// The signed-in principal's tenant's usage (GET /v1/usage): one row per day, flow, agent and
// model, the newest day first, and the totals. Hidden when the server counts no spending (404)
// or the principal may not read.
async function refreshUsage() {
  const section = $("#usage-section");
  if (!may("read")) {
    section.hidden = true;
    section.dataset.state = "absent";
    return;
  }
  const rows = [];
  let offset = 0;
  try {
    // A page at a time, at most 10 pages (1,000 rows) on the page.
    for (let pages = 0; offset !== null && pages < 10; pages++) {
      const response = await api("/usage?offset=" + offset);
      if (!response.ok) {
        // 404: this server counts no spending.
        section.hidden = true;
        section.dataset.state = "absent";
        return;
      }
      const page = await response.json();
      rows.push(...page.usage);
      offset = page.next_offset == null ? null : page.next_offset;
    }
  } catch (_) {
    return;
  }
  rows.sort((a, b) => b.day.localeCompare(a.day) || a.flow.localeCompare(b.flow) ||
    a.agent.localeCompare(b.agent) || a.model.localeCompare(b.model));
  const body = $("#usage tbody");
  body.textContent = "";
  let tokens = 0, calls = 0, cost = 0;
  for (const r of rows) {
    tokens += r.total_tokens;
    calls += r.model_calls;
    cost += r.cost_usd;
    body.append(el("tr", { "data-day": r.day, "data-flow": r.flow, "data-agent": r.agent, "data-model": r.model },
      el("td", {}, r.day), el("td", {}, r.flow), el("td", {}, r.agent), el("td", {}, r.model),
      el("td", { class: "number", title: r.input_tokens + " in, " + r.output_tokens + " out" }, String(r.total_tokens)),
      el("td", { class: "number" }, String(r.model_calls)),
      el("td", { class: "number" }, r.cost_usd > 0 ? "$" + r.cost_usd.toFixed(6) : "")));
  }
  $("#usage").hidden = !rows.length;
  $("#usage-total").textContent = rows.length
    ? "In all: " + tokens + " tokens in " + calls + " model calls" + (cost > 0 ? ", $" + cost.toFixed(6) : "")
    : "Nothing spent yet.";
  section.hidden = false;
  section.dataset.state = "shown";
}

// ---- time travel ---------------------------------------------------------------------------

// The thread's steps (GET .../history), each with what it says and when, and a Fork button for
// a principal with `chat`.
async function loadHistory() {
  const host = $("#history");
  host.textContent = "";
  if (!may("read")) return;
  const response = await api(threadPath() + "/history");
  if (!response.ok) return;
  const { steps } = await response.json();
  const mayFork = may("chat");
  for (const s of steps) {
    const fork = mayFork ? el("button", { class: "small fork", type: "button", title: "Copy the thread up to this step into a new thread" }, "Fork") : null;
    if (fork) fork.addEventListener("click", () => forkAt(s.id));
    const at = new Date(s.at_ms);
    host.append(el("li", { "data-step": String(s.id), "data-kind": s.kind },
      el("span", { class: "kind" }, "turn " + s.turn + " · " + s.kind),
      s.run_path.length ? el("span", { class: "run-path" }, s.run_path.join("/")) : null,
      el("time", { class: "when", dateTime: at.toISOString(), title: at.toLocaleString() }, at.toLocaleTimeString()),
      s.text ? el("span", { class: "text" }, s.text) : null,
      fork));
  }
}

// Forks the thread at `step` into a new thread and opens it. A fork inside a turn waits at
// its fork point until its owner continues it (nothing is asked of an approver).
async function forkAt(step) {
  const to = randomThread();
  const response = await api(threadPath() + "/fork", { method: "POST", json: { at_step: step, thread: to } });
  if (!response.ok) {
    setStatus(await friendlyErrorText(response), "error");
    return;
  }
  const fork = await response.json();
  $("#thread").value = fork.thread;
  refreshThreads();
  await loadThread();
  timeline("turn", null, "forked", "step " + step + " into thread " + fork.thread);
}

// The thread is a fork made inside a turn: it waits at `step` until its owner continues it
// (a run with no answer, scope `chat`); the composer stays closed meanwhile.
function offerForkContinue(step) {
  state.forkStep = step;
  setWaiting(true);
  setStatus("forked at step " + step);
  const notice = chatMessage("notice", "Forked at step " + step + ": the turn goes on from there when you continue.");
  if (may("chat")) {
    const go = el("button", { type: "button", class: "continue fork-continue" }, "Continue");
    go.addEventListener("click", async () => {
      go.remove();
      state.forkStep = null;
      setWaiting(false);
      await startRun({ resume: {} }, "re-running from step " + step + "…");
    });
    notice.append(go);
  }
}

// ---- loading -------------------------------------------------------------------------------

// The flow and thread in the page's address (`#flow=NAME&thread=ID`), so that a reload, a
// bookmark or a link opens the same conversation.
function readAddress() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { flow: params.get("flow") || "", thread: params.get("thread") || "" };
}

function writeAddress() {
  const params = new URLSearchParams();
  if (state.flow) params.set("flow", state.flow);
  params.set("thread", currentThread());
  history.replaceState(null, "", "#" + params.toString());
}

// Shows one record of the thread's timeline (a turn, or the resume of one).
function showRecord(record) {
  state.shownTurns.add(record.turn + ":" + record.resumed);
  timeline("turn", null, turnLabel(record.turn, record.resumed), "starts at " + record.started_at.join("/"));
  for (const text of record.input) chatMessage("user", text);
  const bubbles = new Map();
  let answer = null;
  for (const e of record.events) answer = onEvent(e, bubbles) || answer;
  if (record.end.status === "interrupted") timeline("done", null, "waiting for approval");
  else if (record.end.status === "fork_point") timeline("done", null, "fork point", "step " + record.end.step);
  else if (record.end.status === "stopped") timeline("cancelled", null, "stopped");
  else timeline("done", null, "finished");
  showUsage(record.usage, answer);
}

// Shows the current thread: its timeline rebuilt from the stored records, what it waits on,
// and, if a run of it is going, that run followed from its first event.
// What the thread has spent over all its turns (when the server counts spending).
function showSpent(spent) {
  const line = $("#thread-spent");
  line.hidden = !spent;
  if (!spent) return;
  const cost = spent.cost_usd > 0 ? ", $" + spent.cost_usd.toFixed(6) : "";
  line.textContent = "Spent: " + spent.total_tokens + " tokens (" + spent.input_tokens + " in, " +
    spent.output_tokens + " out) in " + spent.model_calls + " model calls" + cost;
}

async function loadThread() {
  if (state.abort) state.abort.abort();
  state.abort = null;
  state.run = null;
  setBusy(false);
  state.waiting = false;
  state.forkStep = null;
  writeAddress();
  $("#chat").textContent = "";
  $("#timeline").textContent = "";
  $("#history").textContent = "";
  $("#runs").textContent = "";
  state.planCalls.clear();
  showPlan(null);
  state.shownTurns.clear();
  state.visited.clear();
  state.active = "";
  state.failed = "";
  drawTree();
  showAnswered([]);
  showSpent(null);
  for (const item of document.querySelectorAll("#threads li")) {
    item.classList.toggle("current", item.dataset.thread === currentThread());
  }
  if (!may("read")) {
    // A principal who may not read threads sees what it sends and streams, not the history.
    await refreshApprovals([]);
    setStatus("ready");
    updateComposer();
    return;
  }
  const thread = currentThread();
  // The timeline comes a page at a time; the page shows every record.
  let records = [];
  let offset = 0;
  while (offset !== null) {
    const response = await api(threadPath() + "/timeline?offset=" + offset);
    if (thread !== currentThread()) return;
    if (response.ok) {
      const page = await response.json();
      records = records.concat(page.records);
      offset = page.next_offset == null ? null : page.next_offset;
    } else if (response.status !== 404) {
      setStatus(await friendlyErrorText(response), "error");
      return;
    } else {
      offset = null;
    }
  }
  for (const r of records) showRecord(r);
  refreshPlan();
  state.active = "";
  drawTree();
  const last = records[records.length - 1];
  let pending = [];
  let forkPoint = null;
  if (records.length) {
    const t = await (await api(threadPath())).json();
    if (thread !== currentThread()) return;
    showAnswered(t.approvals);
    showSpent(t.spent);
    pending = t.pending;
    forkPoint = t.fork_point || null;
  }
  await refreshApprovals(pending);
  const stopped = !!last && last.end.status === "stopped";
  const waiting = pending.filter((i) => !isStop(i)).length > 0;
  setWaiting(waiting);
  setStatus(waiting ? "waiting for approval" : stopped ? "stopped" : records.length ? "ready" : "new thread");
  loadHistory();
  const runs = await refreshRuns();
  if (thread !== currentThread()) return;
  const going = runs.find((r) => r.status === "running" || r.status === "pending");
  if (going) {
    // A run of this thread goes on (started before a reload, or in another tab): follow it
    // from its first event; the page then shows the thread as recorded.
    setStatus("re-attached to a running turn", "busy");
    const run = { id: going.run_id, last: null, thread };
    const ended = await watch(run);
    // Without the user's message (kept by the tab that sent it), show the record instead.
    if (ended && !run.inputShown && thread === currentThread()) await loadThread();
  } else if (forkPoint) {
    offerForkContinue(forkPoint.step);
  } else if (stopped) {
    const cancelled = [...runs].reverse().find((r) => r.status === "cancelled");
    if (cancelled && may("chat")) {
      const notice = chatMessage("notice", "This turn was stopped.");
      const go = el("button", { type: "button", class: "continue" }, "Continue");
      go.addEventListener("click", () => continueRun(cancelled.run_id));
      notice.append(go);
    }
  }
}

async function loadFlow(name, thread) {
  state.flow = name;
  $("#flow").value = name;
  const response = await api("/flows/" + encodeURIComponent(name));
  if (!response.ok) {
    setStatus(await friendlyErrorText(response), "error");
    return;
  }
  const flow = await response.json();
  state.tree = flow.tree;
  $("#flow-description").textContent = flow.description || "";
  if (thread) $("#thread").value = thread;
  drawTree();
  refreshThreads();
  await loadThread();
}

async function start() {
  try {
    const me = await api("/me");
    state.scopes = (await me.json()).scopes || [];
    $("#refresh-approvals").hidden = !mayQueue();
    $("#refresh-threads").hidden = !may("read");
    refreshMemory();
    refreshUsage();
    const response = await api("/flows");
    if (!response.ok) {
      $("#auth").hidden = true;
      setStatus(await friendlyErrorText(response), "error");
      return;
    }
    const { flows } = await response.json();
    const select = $("#flow");
    select.textContent = "";
    for (const f of flows) select.append(el("option", { value: f.name }, f.name));
    state.flows = flows.map((f) => f.name);
    $("#auth").hidden = true;
    const wanted = readAddress();
    const flow = flows.find((f) => f.name === wanted.flow) || flows[0];
    if (flow) await loadFlow(flow.name, flow.name === wanted.flow ? wanted.thread : "");
  } catch (err) {
    if (err.message !== "unauthorized") setStatus("cannot reach the server: " + err.message, "error");
  }
}

$("#thread").value = readAddress().thread || randomThread();
$("#composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("#message-input");
  const text = input.value.trim();
  if (!text || state.busy || state.waiting) return;
  input.value = "";
  send(text);
});
$("#new-thread").addEventListener("click", () => {
  $("#thread").value = randomThread();
  loadThread();
});
$("#thread").addEventListener("change", () => loadThread());
// A link or a bookmark naming another flow or thread (`#flow=..&thread=..`) opens it: the page
// shows that thread and sends the next message to it.
window.addEventListener("hashchange", () => {
  const wanted = readAddress();
  if (wanted.flow && wanted.flow !== state.flow && state.flows.includes(wanted.flow)) {
    loadFlow(wanted.flow, wanted.thread || randomThread());
  } else if (wanted.thread && wanted.thread !== currentThread()) {
    $("#thread").value = wanted.thread;
    loadThread();
  }
});
$("#flow").addEventListener("change", (e) => loadFlow(e.target.value, randomThread()));
$("#clear-timeline").addEventListener("click", () => { $("#timeline").textContent = ""; });
$("#refresh-approvals").addEventListener("click", () => refreshApprovals([]));
$("#refresh-threads").addEventListener("click", () => refreshThreads());
$("#refresh-memory").addEventListener("click", () => refreshMemory());
$("#refresh-usage").addEventListener("click", () => refreshUsage());
$("#stop").addEventListener("click", () => stop());
$("#auth-form").addEventListener("submit", (e) => {
  e.preventDefault();
  state.token = $("#token").value.trim();
  sessionStorage.setItem("agentflow-token", state.token);
  start();
});
start();
