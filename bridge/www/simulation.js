// The simulation view of the bridge's page (docs/ACADEMY.md, "The page"),
// shown when the bridge runs with --academy (GET api/academy says so). It
// speaks the academy's three WebSockets: the manager's orders (start =
// open, pause = stop, resume, reset), each button disabled from its press
// until the order's answer, or until ACK_TIMEOUT_MS pass without one; the
// brain's code (an Ace editor; load, play, stop, its frequency, its errors);
// and the GUI frames (the brain's image and the robot's joints). The status
// figures come from the simulation's status topic, through app.js's
// Foxglove connection, and from the answers and the #freq reports.
"use strict";

const ACK_TIMEOUT_MS = 10000;  // an order with no answer by then: its button is enabled again, with an error

const sim = {  // what the view has done, for people and for the browser test (window.geckoPage.simulation)
  enabled: false, simulation: "", connected: { manager: false, code: false, gui: false },
  acks: [],            // {command, answer, ms, at}: each answered order, in order
  timeouts: [],        // commands whose answer did not come within ACK_TIMEOUT_MS
  brain: "",           // the brain's last state: loaded, playing, stopped, error
  errors: [],          // the brain's errors (#erro), newest last
  freq: null,          // the last #freq report
  status: null,        // the newest status (state, steps, ...)
  guiFrames: 0, guiImages: 0, guiPerS: 0, lastFrame: null,
};
page.simulation = sim;

function academyUrl(path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/academy/" + path +
    (token ? "?token=" + encodeURIComponent(token) : "");
}

// One academy WebSocket, opened again 2 s after it closes while wanted.
function academySocket(path, handlers) {
  const s = { ws: null, wanted: false, timer: null };
  const open = () => {
    s.timer = null;
    if (!s.wanted) return;
    const ws = new WebSocket(academyUrl(path));
    s.ws = ws;
    ws.onopen = () => { sim.connected[path] = true; showConnection(); if (handlers.open) handlers.open(); };
    ws.onmessage = (e) => { if (typeof e.data === "string") handlers.message(e.data); };
    ws.onclose = () => {
      if (s.ws === ws) s.ws = null;
      sim.connected[path] = false;
      showConnection();
      if (handlers.close) handlers.close();
      if (s.wanted && !s.timer) s.timer = setTimeout(open, 2000);
    };
  };
  s.send = (text) => {
    if (!s.ws || s.ws.readyState !== WebSocket.OPEN) return false;
    s.ws.send(text);
    return true;
  };
  s.start = () => { s.wanted = true; if (!s.ws && !s.timer) open(); };
  s.stop = () => {
    s.wanted = false;
    clearTimeout(s.timer);
    s.timer = null;
    if (s.ws) s.ws.close();
  };
  return s;
}

function showConnection() {
  const down = Object.entries(sim.connected).filter(([path, up]) => !up && (path !== "gui" || currentView === "simulation"));
  $("sim-connection").textContent = down.length ? "not connected: " + down.map(([p]) => p).join(", ") : "";
}

// ---------------------------------------------------------------- answers awaited

// An order (or code message) whose answer is awaited: its button stays
// disabled until then, or until ACK_TIMEOUT_MS have passed.
function awaitAnswer(table, key, button, what, showResult) {
  button.disabled = true;
  const entry = { key, button, what, sentAt: performance.now(), showResult };
  entry.timer = setTimeout(() => {
    table.delete(key);
    button.disabled = false;
    sim.timeouts.push(what);
    showResult(`no answer to ${what} within ${ACK_TIMEOUT_MS / 1000} s: the bridge may still do it; press again to send it again`, true);
  }, ACK_TIMEOUT_MS);
  table.set(key, entry);
  return entry;
}

function answered(table, key) {
  const entry = table.get(key);
  if (!entry) return null;
  clearTimeout(entry.timer);
  table.delete(key);
  entry.button.disabled = false;
  return entry;
}

function failAll(table, why) {
  for (const key of [...table.keys()]) {
    const entry = answered(table, key);
    entry.showResult(`${entry.what}: ${why}`, true);
  }
}

function showSimResult(text, error) {
  $("sim-result").textContent = text;
  $("sim-result").className = error ? "error" : "muted";
}

// ---------------------------------------------------------------- the manager

const manager = academySocket("manager", {
  open: () => manager.send(JSON.stringify({ command: "Ping", data: {} })),
  message: onManager,
  close: () => failAll(orders, "the connection to the bridge closed before the answer"),
});
const orders = new Map();  // order id -> awaited answer
let nextOrder = 1;

function order(command, button) {
  const id = nextOrder++;
  if (!manager.send(JSON.stringify({ command, data: {}, id }))) {
    showSimResult(`${command}: not connected to the bridge's manager`, true);
    return;
  }
  awaitAnswer(orders, id, button, command, showSimResult);
  showSimResult(`${command} sent, waiting for its answer…`, false);
}

function onManager(text) {
  let m;
  try { m = JSON.parse(text); } catch (err) { return; }
  const data = m.data || {};
  const entry = m.id !== undefined ? answered(orders, m.id) : null;
  const now = performance.now();
  if (entry) sim.acks.push({ command: entry.what, answer: m.command, ms: now - entry.sentAt, at: now });
  if (data.command === "Ping") {
    if (!data.simulation_open && !sim.status) setFigure("fig-state", "not started");
    return;
  }
  const late = m.id !== undefined && !entry && m.id < nextOrder ? " (late: after the page's timeout)" : "";
  if (m.command === "error") {
    showSimResult(`${data.command || "order"} refused: ${data.message}${late}`, true);
  } else if (m.command === "PingDone") {
    const took = entry ? ` in ${(now - entry.sentAt).toFixed(0)} ms` : "";
    showSimResult(`${data.command} done${took}${late}`, false);
    if (data.status) showStatus(data.status);
  }
}

for (const button of $("sim-controls").querySelectorAll("button[data-order]"))
  onActivate(button, () => order(button.dataset.order, button));

// ---------------------------------------------------------------- the figures

function setFigure(id, text) { $(id).textContent = text; }
const fixed = (v, digits) => (typeof v === "number" && isFinite(v) ? v.toFixed(digits) : "–");

// The newest status wins: the answers and the status topic come by
// different sockets, so an older one may arrive after a newer one.
function showStatus(s) {
  const stamp = Number(s.stamp_ns || 0);
  if (sim.status && stamp && stamp < sim.status.stamp) return;
  sim.status = {
    stamp, state: String(s.state), steps: Number(s.steps), stepsPerS: s.steps_per_s === undefined ? null : Number(s.steps_per_s),
    time: Number(s.simulated_time), rtf: Number(s.real_time_factor), resets: Number(s.resets),
  };
  setFigure("fig-state", sim.status.state);
  setFigure("fig-steps", String(sim.status.steps));
  if (sim.status.stepsPerS !== null) setFigure("fig-steps-per-s", fixed(sim.status.stepsPerS, 1));
  setFigure("fig-time", fixed(sim.status.time, 2) + " s");
  setFigure("fig-rtf", fixed(sim.status.rtf, 2));
  setFigure("fig-resets", String(sim.status.resets));
}

function showFrequencies() {
  const f = sim.freq;
  if (f) setFigure("fig-brain", `${fixed(f.brain, 1)} Hz of ${f.brain_target} Hz`);
  const here = currentView === "simulation" ? `, ${sim.guiPerS.toFixed(1)} here` : "";
  if (f) setFigure("fig-gui", `${fixed(f.gui, 1)} Hz of ${f.gui_target} Hz${here}`);
}

// ---------------------------------------------------------------- the brain

const editor = ace.edit("editor", { mode: "ace/mode/python", useWorker: false, tabSize: 4, useSoftTabs: true });
editor.setValue([
  "import GUI",
  "import HAL",
  "",
  "# Before the loop: runs once. The loop's body runs at the brain's frequency.",
  "n = 0",
  "while True:",
  "    n += 1",
  "    angles = HAL.get_joint_angles()",
  "    GUI.show_text(\"iteration %d, joints %s\" % (n, [round(a, 3) for a in angles]))",
  "",
].join("\n"), -1);

const code = academySocket("code", { message: onCode, close: () => failAll(codeOrders, "the connection to the bridge closed before the answer") });
const codeOrders = new Map();  // load | play | stop | freq -> awaited answer

function showBrain(state, text, error) {
  sim.brain = state;
  $("brain-state").textContent = text;
  $("brain-state").className = error ? "error" : "muted";
}

function codeOrder(what, button) {
  let message;
  if (what === "load") {
    message = "#code" + editor.getValue();
    showErrors([]);
  } else if (what === "play") message = "#play";
  else if (what === "stop") message = "#stop";
  else {
    const hz = Number($("brain-hz").value);
    message = "#freq" + JSON.stringify({ brain: hz });
  }
  if (!code.send(message)) { showBrain(sim.brain, `${what}: not connected to the bridge's code endpoint`, true); return; }
  awaitAnswer(codeOrders, what, button, what, (text, error) => showBrain(sim.brain, text, error));
}

for (const button of $("brain-controls").querySelectorAll("button[data-code]"))
  onActivate(button, () => codeOrder(button.dataset.code, button));

function onCode(text) {
  const name = text.slice(0, 5), body = text.slice(5);
  if (name === "#exec") {
    answered(codeOrders, "load");
    showBrain("loaded", "loaded: press Play", false);
  } else if (name === "#play") {
    answered(codeOrders, "play");
    showBrain("playing", "playing", false);
  } else if (name === "#stop" || name === "#rest") {
    answered(codeOrders, "stop");
    showBrain("stopped", "stopped", false);
  } else if (name === "#freq") {
    try { sim.freq = JSON.parse(body); } catch (err) { return; }
    answered(codeOrders, "freq");
    showFrequencies();
  } else if (name === "#erro") {
    let e;
    try { e = JSON.parse(body); } catch (err) { e = { message: body }; }
    // A load's error answers the load; a refusal answers what waits (play first);
    // a run's error comes when the brain raises.
    const key = e.phase === "load" ? "load" : e.phase === "run" ? null : ["play", "load", "stop", "freq"].find((k) => codeOrders.has(k));
    if (key) answered(codeOrders, key);
    sim.errors.push(e);
    showErrors([e]);
    showBrain("error", e.phase === "run" ? "stopped by an error" : e.phase === "load" ? "not loaded" : "refused: " + e.message, true);
  }
}

// The brain's errors under the editor, each marked at its line in the editor too.
function showErrors(errors) {
  $("brain-errors").replaceChildren(...errors.map((e) => {
    const div = document.createElement("div");
    div.textContent = (e.line ? `line ${e.line}: ` : "") + e.message;
    if (e.line) div.addEventListener("pointerdown", () => { editor.gotoLine(e.line); editor.focus(); });
    return div;
  }));
  editor.session.setAnnotations(errors.filter((e) => e.line).map((e) => ({ row: e.line - 1, column: 0, text: e.message, type: "error" })));
}

// ---------------------------------------------------------------- the GUI

// Opened only while the view shows: the bridge makes frames only while a page looks.
const gui = academySocket("gui", { message: onGui });
const guiTimes = [];

function onGui(text) {
  if (!text.startsWith("#gui")) return;
  let f;
  try { f = JSON.parse(text.slice(4)); } catch (err) { return; }
  sim.guiFrames++;
  sim.lastFrame = { frame: f.frame, shape: f.shape, pose: f.pose, text: f.text, image: !!f.image };
  const now = performance.now();
  guiTimes.push(now);
  while (guiTimes.length && now - guiTimes[0] > 2000) guiTimes.shift();
  sim.guiPerS = guiTimes.length > 1 ? (guiTimes.length - 1) / ((now - guiTimes[0]) / 1000) : 0;
  if (f.image) {
    $("gui-image").src = "data:image/jpeg;base64," + f.image;
    $("gui-info").textContent = f.shape ? `${f.shape[1]}×${f.shape[0]}, frame ${f.frame}` : `frame ${f.frame}`;
  }
  $("gui-text").textContent = f.text || "";
  if (f.pose && Array.isArray(f.pose.names)) {
    $("gui-pose").tBodies[0].replaceChildren(...f.pose.names.map((name, i) => {
      const row = document.createElement("tr");
      const th = document.createElement("th"), td = document.createElement("td");
      th.textContent = name;
      td.className = "num";
      td.textContent = fixed(Number(f.pose.position[i]), 3) + " rad";
      row.append(th, td);
      return row;
    }));
  }
}
$("gui-image").addEventListener("load", () => { sim.guiImages++; });

// ---------------------------------------------------------------- the view

views.simulation = {
  show() { gui.start(); showConnection(); editor.resize(); },
  hide() { gui.stop(); showConnection(); },
};
setInterval(showFrequencies, 1000);

async function findAcademy() {
  let info;
  try {
    info = await (await fetch("api/academy", { cache: "no-store" })).json();
  } catch (err) {
    setTimeout(findAcademy, 2000);  // the bridge may be restarting
    return;
  }
  if (!info.academy) return;  // a bridge without --academy: the topics view only
  sim.enabled = true;
  sim.simulation = info.simulation;
  $("sim-name").textContent = info.simulation;
  $("simulation-tab").hidden = false;
  watchTopic(info.simulation + "/status", showStatus);
  manager.start();
  code.start();
  if (location.hash === "#simulation") showView("simulation");
}
findAcademy();
