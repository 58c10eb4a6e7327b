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
  // What the signed-in principal may do (GET /v1/me); Approve buttons need `approve`.
  scopes: [],
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
  const opts = Object.assign({ headers: {} }, options || {});
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

async function errorText(response) {
  try {
    const body = await response.json();
    return body.error ? publicText(body.error) : response.statusText;
  } catch (_) {
    return response.status + " " + response.statusText;
  }
}

// Reads a text/event-stream response, calling onEvent(name, data) per event.
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
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "event") name = val;
        else if (field === "data") data.push(val);
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
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
    if (state.active === m.n.name) cls.push("active");
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
}

function showApprovals(interrupts) {
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
    // Entries of the queue name their thread; those of a turn's end are the current thread's.
    const thread = i.thread || currentThread();
    let buttons;
    if (may("approve")) {
      const approve = el("button", { class: "approve", type: "button" }, "Approve");
      const deny = el("button", { class: "deny", type: "button" }, "Deny");
      approve.addEventListener("click", () => resume(thread, i.id, true));
      deny.addEventListener("click", () => resume(thread, i.id, false));
      buttons = el("div", { class: "buttons" }, approve, deny);
    } else {
      buttons = el("p", { class: "muted" }, "Waiting for an approver.");
    }
    host.append(el("div", { class: "approval", "data-interrupt": i.id, "data-thread": thread },
      el("p", { class: "question" }, question),
      el("div", { class: "meta" }, "thread " + thread + " · interrupt " + i.id),
      buttons));
  }
}

// The approvals queue of the flow when the principal may see it, else what the current
// thread waits on (`pending`, from the thread or from the end of its last turn).
async function refreshApprovals(pending) {
  if (!mayQueue()) {
    showApprovals(pending);
    return;
  }
  try {
    const response = await api("/flows/" + encodeURIComponent(state.flow) + "/interrupts");
    if (response.ok) showApprovals((await response.json()).interrupts);
    else showApprovals(pending);
  } catch (_) {
    showApprovals(pending);
  }
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

// Handles the events of one streamed turn or resume.
function turnHandler(resumed) {
  const bubbles = new Map(); // run path -> the bubble being streamed
  let failed = false; // the turn's error is shown once, whichever events carry it
  return (name, data) => {
    if (name === "turn") {
      const n = data.turn + 1;
      timeline("turn", null, data.resumed ? "turn " + n + " resumed" : "turn " + n,
        "thread " + data.thread + ", starts at " + data.started_at.join("/"));
    } else if (name === "chunk") {
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
      onEvent(data, bubbles);
    } else if (name === "error") {
      if (!failed) chatMessage("error", publicText(data));
      failed = true;
      timeline("error", null, "error", publicText(data));
    } else if (name === "done") {
      if (data.failed) {
        timeline("error", null, "failed", "the turn was not recorded");
        setStatus("failed", "error");
        return;
      }
      timeline("done", null, data.interrupted ? "waiting for approval" : "finished", data.output || "");
      if (data.interrupted) {
        refreshApprovals(data.interrupts);
        chatMessage("notice", "Waiting for a human to approve: see Approvals.");
        setStatus("waiting for approval");
      } else {
        refreshApprovals([]);
        setStatus("finished");
        state.active = "";
        drawTree();
      }
      if (resumed && may("read")) refreshAnswered();
    }
  };
}

function onEvent(e, bubbles) {
  const path = e.run_path;
  const key = path.join("/");
  markActive(path);
  const m = e.message;
  if (m) {
    if (m.role === "assistant") {
      const bubble = bubbles.get(key);
      bubbles.delete(key);
      if (bubble) {
        bubble.classList.remove("streaming");
        if (!m.content) bubble.remove();
      } else if (m.content) {
        chatMessage("assistant", m.content, key);
      }
      if (m.content) timeline("message", path, "said", m.content);
      for (const call of m.tool_calls || []) {
        timeline("tool-call", path, "calls " + call.name, call.arguments);
      }
    } else if (m.role === "tool") {
      timeline("tool-result", path, (m.tool_name || "tool") + " returned", m.content);
    }
  }
  if (e.custom !== undefined) timeline("custom", path, "data", JSON.stringify(e.custom));
  const a = e.action;
  if (a === "exit") timeline("exit", path, "exit", m && m.role === "tool" ? m.content : "");
  else if (a && a.transfer_to_agent) timeline("transfer", path, "transfer → " + a.transfer_to_agent);
  else if (a && a.interrupted) {
    const info = a.interrupted.info;
    timeline("interrupt", path, "interrupt " + a.interrupted.id, (info && info.question) || JSON.stringify(info));
  } else if (a && a.break_loop) timeline("transfer", path, "break loop");
  if (e.error) {
    timeline("error", path, "error", publicText(e.error));
    chatMessage("error", publicText(e.error), key);
  }
}

async function stream(path, body, label, resumed) {
  state.busy = true;
  $("#send").disabled = true;
  setStatus(label, "busy");
  try {
    const response = await api(path, { method: "POST", json: body });
    if (!response.ok) {
      const text = await errorText(response);
      chatMessage("error", text);
      setStatus(text, "error");
      return;
    }
    await readSse(response, turnHandler(resumed));
  } catch (err) {
    if (err.message !== "unauthorized") {
      chatMessage("error", "connection lost: " + err.message);
      setStatus("connection lost", "error");
    }
  } finally {
    state.busy = false;
    $("#send").disabled = false;
  }
}

function threadPath(thread) {
  return "/flows/" + encodeURIComponent(state.flow) + "/threads/" + encodeURIComponent(thread || currentThread());
}

async function send(text) {
  chatMessage("user", text);
  state.visited.clear();
  await stream(threadPath() + "/turns", { message: text }, "running…");
}

// Answers interrupt `interruptId` of `thread`; an entry of the queue may be another thread's,
// which the console then shows.
async function resume(thread, interruptId, approve) {
  for (const b of document.querySelectorAll("#approvals button")) b.disabled = true;
  if (thread !== currentThread()) {
    $("#thread").value = thread;
    $("#timeline").textContent = "";
    await loadThread();
  }
  timeline("turn", null, approve ? "approved" : "denied", interruptId);
  await stream(threadPath(thread) + "/resume", { interrupt_id: interruptId, data: { approve } }, "resuming…", true);
}

async function refreshAnswered() {
  const response = await api(threadPath());
  if (response.ok) showAnswered((await response.json()).approvals);
}

// ---- loading -------------------------------------------------------------------------------

async function loadThread() {
  $("#chat").textContent = "";
  showAnswered([]);
  if (!may("read")) {
    // A principal who may not read threads sees what it sends and streams, not the history.
    await refreshApprovals([]);
    setStatus("ready");
    return;
  }
  const response = await api(threadPath());
  if (response.status === 404) {
    await refreshApprovals([]);
    setStatus("new thread");
    return;
  }
  if (!response.ok) {
    setStatus(await errorText(response), "error");
    return;
  }
  const t = await response.json();
  for (const m of t.messages) {
    const msg = m.message;
    if (msg.role === "user") chatMessage("user", msg.content);
    else if (msg.role === "assistant" && msg.content && !(msg.tool_calls || []).length) {
      chatMessage("assistant", msg.content, m.run_path.join("/"));
    }
  }
  showAnswered(t.approvals);
  await refreshApprovals(t.pending);
  setStatus(t.pending.length ? "waiting for approval" : "ready");
}

async function loadFlow(name) {
  state.flow = name;
  const response = await api("/flows/" + encodeURIComponent(name));
  if (!response.ok) {
    setStatus(await errorText(response), "error");
    return;
  }
  const flow = await response.json();
  state.tree = flow.tree;
  $("#flow-description").textContent = flow.description || "";
  drawTree();
  await loadThread();
}

async function start() {
  try {
    const me = await api("/me");
    state.scopes = (await me.json()).scopes || [];
    $("#refresh-approvals").hidden = !mayQueue();
    const response = await api("/flows");
    if (!response.ok) {
      $("#auth").hidden = true;
      setStatus(await errorText(response), "error");
      return;
    }
    const { flows } = await response.json();
    const select = $("#flow");
    select.textContent = "";
    for (const f of flows) select.append(el("option", { value: f.name }, f.name));
    $("#auth").hidden = true;
    if (flows.length) await loadFlow(flows[0].name);
  } catch (err) {
    if (err.message !== "unauthorized") setStatus("cannot reach the server", "error");
  }
}

$("#thread").value = randomThread();
$("#composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("#message-input");
  const text = input.value.trim();
  if (!text || state.busy) return;
  input.value = "";
  send(text);
});
$("#new-thread").addEventListener("click", () => {
  $("#thread").value = randomThread();
  $("#timeline").textContent = "";
  state.visited.clear();
  state.active = "";
  drawTree();
  loadThread();
});
$("#thread").addEventListener("change", () => loadThread());
$("#flow").addEventListener("change", (e) => loadFlow(e.target.value));
$("#clear-timeline").addEventListener("click", () => { $("#timeline").textContent = ""; });
$("#refresh-approvals").addEventListener("click", () => refreshApprovals([]));
$("#auth-form").addEventListener("submit", (e) => {
  e.preventDefault();
  state.token = $("#token").value.trim();
  sessionStorage.setItem("agentflow-token", state.token);
  start();
});
start();
