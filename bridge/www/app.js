// The bridge's page: a Foxglove WebSocket client of the bridge that serves
// it. Lists the key's topics with their figures, shows a topic's latest
// message (JSON, or the picture of an image topic), plots a clicked numeric
// field, and publishes a message typed into a form of the topic's fields.
// Everything it loads comes from the bridge (vendor/ is npm's uPlot,
// msgpack and Ace, installed with the bridge). With the academy, a second
// view (simulation.js) controls the simulation and its brain.
"use strict";

const page = {  // what the page has done, for people and for the browser test
  topics: [], plotPoints: 0, imageFrames: 0, messages: 0, published: 0, lastStatus: "",
};
window.geckoPage = page;

const params = new URLSearchParams(location.search);
const token = params.get("token");
const $ = (id) => document.getElementById(id);
const utf8 = new TextEncoder();

const channels = new Map();   // channel id -> {id, topic, encoding, schemaName, schema}
const topics = new Map();     // topic -> {name, json, msgpack, figures, seen: [{t, bytes}]}
const services = new Map();   // id -> service
let ws = null;
let nextSubscription = 1, nextClientChannel = 1;
let selected = null;          // {topic, subscription}
let plot = null;              // {topic, path, xs, ys, chart}
const clientChannels = new Map();  // topic -> client channel id
const watched = new Map();    // topic -> {onMessage, subscription}: topics other views follow (watchTopic)

// ---------------------------------------------------------------- connection

function connect() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/" +
    (token ? "?token=" + encodeURIComponent(token) : "");
  ws = new WebSocket(url, ["foxglove.websocket.v1"]);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { $("connection").textContent = "connected"; $("connection").className = "state"; };
  ws.onclose = (e) => {
    $("connection").textContent = "disconnected" + (e.reason ? ": " + e.reason : "") + "; retrying";
    $("connection").className = "state down";
    channels.clear(); topics.clear(); services.clear(); clientChannels.clear();
    if (selected) selected.subscription = null;
    for (const w of watched.values()) w.subscription = null;
    render();
    setTimeout(connect, 2000);
  };
  ws.onmessage = (e) => (typeof e.data === "string" ? onText(JSON.parse(e.data)) : onBinary(new DataView(e.data)));
}

function send(obj) { if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj)); }

function onText(msg) {
  switch (msg.op) {
    case "serverInfo":
      $("key").textContent = (msg.metadata && msg.metadata.key) || msg.name;
      break;
    case "advertise":
      for (const ch of msg.channels) {
        let schema = null;
        try { schema = ch.schema ? JSON.parse(ch.schema) : null; } catch (err) { schema = null; }
        const c = { ...ch, schema };
        channels.set(ch.id, c);
        const t = topicOf(ch.topic);
        t[ch.encoding === "json" ? "json" : "msgpack"] = c;
        if (ch.encoding === "msgpack") t.type = ch.schemaName;
        // A channel advertised again (a new schema, a publisher back): follow it.
        if (selected && selected.topic === ch.topic && ch.encoding === "msgpack" && !selected.subscription) follow(ch.topic);
      }
      followWatched();
      render();
      break;
    case "unadvertise":
      for (const id of msg.channelIds) {
        const c = channels.get(id);
        channels.delete(id);
        if (!c) continue;
        const t = topics.get(c.topic);
        if (!t) continue;
        if (t.json && t.json.id === id) t.json = null;
        if (t.msgpack && t.msgpack.id === id) {
          t.msgpack = null;
          if (selected && selected.topic === c.topic) selected.subscription = null;
          if (watched.has(c.topic)) watched.get(c.topic).subscription = null;
        }
        if (!t.json && !t.msgpack) topics.delete(c.topic);
      }
      render();
      break;
    case "advertiseServices":
      for (const s of msg.services) services.set(s.id, s);
      render();
      break;
    case "unadvertiseServices":
      for (const id of msg.serviceIds) services.delete(id);
      render();
      break;
    case "status":
      page.lastStatus = msg.message;
      $("status-line").textContent = ["info", "warning", "error"][msg.level] + ": " + msg.message;
      if (msg.level === 2 && $("publish-result").dataset.waiting) $("publish-result").textContent = msg.message;
      break;
  }
}

function topicOf(name) {
  if (!topics.has(name)) topics.set(name, { name, json: null, msgpack: null, type: "", figures: null, seen: [] });
  return topics.get(name);
}

function onBinary(view) {
  if (view.getUint8(0) !== 0x01) return;
  const subscription = view.getUint32(1, true);
  for (const w of watched.values()) {
    if (w.subscription !== subscription) continue;
    try { w.onMessage(MessagePack.decode(new Uint8Array(view.buffer, view.byteOffset + 13, view.byteLength - 13))); } catch (err) { /* not msgpack */ }
    return;
  }
  if (!selected || selected.subscription !== subscription) return;
  const payload = new Uint8Array(view.buffer, view.byteOffset + 13, view.byteLength - 13);
  const t = topics.get(selected.topic);
  if (!t) return;
  const now = performance.now();
  t.seen.push({ t: now, bytes: payload.byteLength });
  while (t.seen.length && now - t.seen[0].t > 2000) t.seen.shift();
  page.messages++;
  let message;
  try { message = MessagePack.decode(payload); } catch (err) { return; }
  if (plot && plot.topic === selected.topic) addPoint(message);
  if (isImage(t)) drawImage(message);
  showMessage(message);
}

/// Calls onMessage(decoded message) for every message of `topic`, from
/// whenever it is advertised, across reconnections (the simulation view's status).
function watchTopic(topic, onMessage) {
  watched.set(topic, { onMessage, subscription: null });
  followWatched();
}

function followWatched() {
  for (const [topic, w] of watched) {
    const t = topics.get(topic);
    if (w.subscription || !t || !t.msgpack) continue;
    w.subscription = nextSubscription++;
    send({ op: "subscribe", subscriptions: [{ id: w.subscription, channelId: t.msgpack.id }] });
  }
}

// ---------------------------------------------------------------- the views

// Topics, and with the academy the simulation. The view is in the URL's
// hash (#simulation), so a reload keeps it. Other scripts register what
// showing and hiding their view does.
const views = { topics: { show() {}, hide() {} } };
let currentView = "topics";
function showView(name) {
  if (!views[name] || name === currentView) return;
  views[currentView].hide();
  $(currentView + "-view").hidden = true;
  currentView = name;
  $(name + "-view").hidden = false;
  for (const b of $("views").querySelectorAll("button")) b.classList.toggle("current", b.dataset.view === name);
  views[name].show();
  history.replaceState(null, "", name === "topics" ? location.pathname + location.search : "#" + name);
}

// ---------------------------------------------------------------- the topic list

async function refreshFigures() {
  try {
    const r = await fetch("api/topics", { cache: "no-store" });
    const body = await r.json();
    for (const [name, f] of Object.entries(body.topics)) if (topics.has(name)) topics.get(name).figures = f;
    const s = await (await fetch("api/stats", { cache: "no-store" })).json();
    $("counters").textContent = `${s.clients} client(s), ${s.messages_sent} messages sent, ${s.drops} dropped`;
    render();
  } catch (err) { /* the bridge may be restarting */ }
}

function human(n, unit) {
  if (n === undefined || n === null) return "";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + " M" + unit;
  if (n >= 1e3) return (n / 1e3).toFixed(1) + " k" + unit;
  return n.toFixed(n < 10 ? 1 : 0) + " " + unit;
}

function render() {
  const body = $("topics").tBodies[0];
  const names = [...topics.keys()].sort();
  page.topics = names;
  body.replaceChildren(...names.map((name) => {
    const t = topics.get(name);
    const f = t.figures || {};
    let rate = f.rate, bandwidth = f.bandwidth;
    if (t.seen.length > 1) {  // watched here: measured here
      const span = (t.seen[t.seen.length - 1].t - t.seen[0].t) / 1000;
      if (span > 0) {
        rate = (t.seen.length - 1) / span;
        bandwidth = t.seen.slice(1).reduce((a, s) => a + s.bytes, 0) / span;
      }
    }
    const row = document.createElement("tr");
    row.dataset.topic = name;
    if (selected && selected.topic === name) row.className = "selected";
    const cells = [name, t.type, human(rate, "Hz"), human(bandwidth, "B/s"),
      String((f.drops || 0) + (f.bridge_drops || 0)), (f.publishers || []).join(", ")];
    cells.forEach((text, i) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (i >= 2 && i <= 4) td.className = "num";
      row.appendChild(td);
    });
    return row;
  }));
  $("services").replaceChildren(...[...services.values()].map((s) => {
    const li = document.createElement("li");
    li.textContent = `${s.name} (${s.type})`;
    return li;
  }));
}

// The topic list and the message view are redrawn while they are read (the
// figures every second, the message ten times a second): an element under
// the pointer may be replaced between its press and its release, and a
// browser then sends the click to neither. So a press is what selects.
function onPress(container, attribute, action) {
  container.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    const hit = e.target.closest("[" + attribute + "]");
    if (hit && container.contains(hit)) action(hit.getAttribute(attribute));
  });
}
onPress($("topics").tBodies[0], "data-topic", select);
// A button acts on its press too; and on Enter or Space when focused (a
// click with no pointer behind it).
function onActivate(element, action) {
  element.addEventListener("pointerdown", (e) => { if (e.button === 0 && !element.disabled) action(); });
  element.addEventListener("click", (e) => { if (e.detail === 0 && !element.disabled) action(); });
}
for (const b of $("views").querySelectorAll("button")) onActivate(b, () => showView(b.dataset.view));
onPress($("message"), "data-path", (path) => { if (selected) startPlot(selected.topic, path); });

// ---------------------------------------------------------------- one topic

function isImage(t) { return t.json && /RawImage$/.test(t.json.schemaName); }

function select(name) {
  if (selected && selected.subscription) send({ op: "unsubscribe", subscriptionIds: [selected.subscription] });
  selected = { topic: name, subscription: null };
  $("selected-title").textContent = name;
  $("message").textContent = "waiting for a message…";
  $("image-box").hidden = true;
  follow(name);
  buildForm(name);
  render();
}

function follow(name) {
  const t = topics.get(name);
  if (!t || !t.msgpack || !selected || selected.topic !== name) return;
  selected.subscription = nextSubscription++;
  // Images: only the newest matters; a slow page never queues old frames.
  const sub = { id: selected.subscription, channelId: t.msgpack.id };
  if (isImage(t)) sub.latest = true;
  send({ op: "subscribe", subscriptions: [sub] });
}

function describe(value) {  // bytes as a length: a message is for reading
  if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
  if (Array.isArray(value)) return value.length > 32 ? value.slice(0, 32).map(describe).concat(["…"]) : value.map(describe);
  if (value && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = describe(v);
    return out;
  }
  return typeof value === "bigint" ? Number(value) : value;
}

let lastShown = 0;
function showMessage(message) {
  const now = performance.now();
  if (now - lastShown < 100) return;  // a person reads ten times a second at most
  lastShown = now;
  const pre = $("message");
  pre.replaceChildren();
  writeValue(pre, describe(message), "", 0);
}

// Writes a value as indented JSON, numbers clickable to plot.
function writeValue(out, value, path, indent) {
  const pad = "  ".repeat(indent);
  if (value && typeof value === "object" && !Array.isArray(value)) {
    out.append("{\n");
    const entries = Object.entries(value);
    entries.forEach(([k, v], i) => {
      out.append(pad + "  " + JSON.stringify(k) + ": ");
      writeValue(out, v, path ? path + "." + k : k, indent + 1);
      out.append(i + 1 < entries.length ? ",\n" : "\n");
    });
    out.append(pad + "}");
  } else if (Array.isArray(value) && value.every((v) => typeof v === "number") && value.length <= 16) {
    out.append("[");
    value.forEach((v, i) => {
      writeValue(out, v, path + "[" + i + "]", indent);
      if (i + 1 < value.length) out.append(", ");
    });
    out.append("]");
  } else if (typeof value === "number") {
    const span = document.createElement("span");
    span.className = "field";
    span.dataset.path = path;
    span.textContent = String(value);
    span.title = "plot " + path;
    out.append(span);
  } else {
    out.append(JSON.stringify(value));
  }
}

// ---------------------------------------------------------------- plot

function valueAt(message, path) {
  let v = message;
  for (const part of path.split(/\.|\[|\]/).filter((p) => p !== "")) {
    if (v === null || v === undefined) return undefined;
    v = v[part];
  }
  return typeof v === "bigint" ? Number(v) : v;
}

function startPlot(topic, path) {
  if (plot && plot.chart) plot.chart.destroy();
  $("plot-box").hidden = false;
  $("plot-title").textContent = `${topic}: ${path}`;
  const width = Math.max(300, $("detail-pane").clientWidth - 20);
  const chart = new uPlot({
    width, height: 240,
    scales: { x: { time: true } },
    series: [{}, { label: path, stroke: "#1a5fb4", width: 1.5 }],
  }, [[], []], $("plot"));
  plot = { topic, path, xs: [], ys: [], chart, dirty: false };
  page.plotPoints = 0;
}

function addPoint(message) {
  const y = valueAt(message, plot.path);
  if (typeof y !== "number") return;
  plot.xs.push(Date.now() / 1000);
  plot.ys.push(y);
  if (plot.xs.length > 2000) { plot.xs.shift(); plot.ys.shift(); }
  page.plotPoints++;
  plot.dirty = true;
}

function redrawPlot() {
  if (plot && plot.dirty) { plot.chart.setData([plot.xs, plot.ys]); plot.dirty = false; }
  requestAnimationFrame(redrawPlot);
}

// ---------------------------------------------------------------- image

function drawImage(m) {
  const width = Number(m.width), height = Number(m.height), step = Number(m.step) || 0;
  const data = m.data;
  if (!(data instanceof Uint8Array) || !width || !height) return;
  const canvas = $("image");
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(width, height);
  const px = img.data;
  const layouts = { rgb8: [3, 0, 1, 2], bgr8: [3, 2, 1, 0], rgba8: [4, 0, 1, 2], bgra8: [4, 2, 1, 0], mono8: [1, 0, 0, 0] };
  const layout = layouts[m.encoding];
  if (!layout) { $("image-info").textContent = `encoding ${m.encoding} is not drawn here`; return; }
  const [bpp, r, g, b] = layout;
  const rowBytes = step || width * bpp;
  for (let y = 0; y < height; y++) {
    let src = y * rowBytes, dst = y * width * 4;
    for (let x = 0; x < width; x++, src += bpp, dst += 4) {
      px[dst] = data[src + r]; px[dst + 1] = data[src + g]; px[dst + 2] = data[src + b]; px[dst + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  $("image-box").hidden = false;
  $("image-info").textContent = `${width}×${height} ${m.encoding}`;
  page.imageFrames++;
}

// ---------------------------------------------------------------- publish

function buildForm(name) {
  const t = topics.get(name);
  const form = $("publish");
  const schema = t && t.json && t.json.schema;
  if (!schema || !schema.properties || isImage(t)) { form.hidden = true; return; }
  form.hidden = false;
  $("publish-topic").textContent = name;
  $("publish-type").textContent = t.type;
  const fields = $("publish-fields");
  fields.replaceChildren();
  for (const [field, s] of Object.entries(schema.properties)) {
    const label = document.createElement("label");
    const caption = document.createElement("span");
    caption.textContent = field;
    label.appendChild(caption);
    let input;
    const type = Array.isArray(s.type) ? s.type[0] : s.type;
    if (type === "number" || type === "integer") {
      input = document.createElement("input");
      input.type = "number";
      input.step = type === "integer" ? "1" : "any";
      input.value = "0";
    } else if (type === "boolean") {
      input = document.createElement("input");
      input.type = "checkbox";
    } else if (type === "string") {
      input = document.createElement("input");
      input.type = "text";
    } else {
      input = document.createElement("textarea");
      input.value = type === "array" ? "[]" : JSON.stringify(example(s), null, 1);
    }
    input.name = field;
    input.dataset.kind = type || "json";
    label.appendChild(input);
    fields.appendChild(label);
  }
  form.onsubmit = (e) => { e.preventDefault(); publish(name); };
}

function example(schema) {  // an object of the schema's shape, zeros and empty strings
  if (!schema || schema.type !== "object" || !schema.properties) return {};
  const out = {};
  for (const [k, s] of Object.entries(schema.properties)) {
    const type = Array.isArray(s.type) ? s.type[0] : s.type;
    out[k] = type === "object" ? example(s) : type === "array" ? [] : type === "string" ? "" :
      type === "boolean" ? false : 0;
  }
  return out;
}

function publish(name) {
  const t = topics.get(name);
  const message = {};
  const result = $("publish-result");
  try {
    for (const input of $("publish-fields").querySelectorAll("input, textarea")) {
      const kind = input.dataset.kind;
      if (kind === "number" || kind === "integer") message[input.name] = Number(input.value);
      else if (kind === "boolean") message[input.name] = input.checked;
      else if (kind === "string") message[input.name] = input.value;
      else message[input.name] = JSON.parse(input.value);
    }
  } catch (err) {
    result.textContent = "not JSON: " + err.message;
    return;
  }
  if (!clientChannels.has(name)) {
    const id = nextClientChannel++;
    clientChannels.set(name, id);
    send({ op: "advertise", channels: [{ id, topic: name, encoding: "json", schemaName: t ? t.type : "" }] });
  }
  let text = JSON.stringify(message);
  // Integers in float fields are sent as floats: what a typed publisher sends.
  const props = (t && t.json && t.json.schema && t.json.schema.properties) || {};
  for (const [k, s] of Object.entries(props))
    if (s.type === "number" && Number.isInteger(message[k])) text = text.replace(`"${k}":${message[k]}`, `"${k}":${message[k]}.0`);
  const body = utf8.encode(text);
  const frame = new Uint8Array(5 + body.byteLength);
  frame[0] = 0x01;
  new DataView(frame.buffer).setUint32(1, clientChannels.get(name), true);
  frame.set(body, 5);
  ws.send(frame);
  page.published++;
  result.dataset.waiting = "1";
  result.textContent = "sent " + new Date().toLocaleTimeString();
}

connect();
setInterval(refreshFigures, 2000);
setInterval(render, 1000);
requestAnimationFrame(redrawPlot);
