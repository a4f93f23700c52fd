// gecko-bridge with the Foxglove npm client (@foxglove/ws-protocol over ws),
// a client none of us wrote: both subprotocol names, serverInfo, the
// channels of pub_imu's key, JSON checked against the advertised JSON
// Schema, raw msgpack, a publish a C++ subscriber (gecko echo) receives, a
// refused publish, the add service, the connection graph, and the refusals
// a misbehaving client gets while others keep being served.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Key, foxglove, npm, program, until } from "./harness.mjs";

const decoder = new TextDecoder();
const encoder = new TextEncoder();
let key, bridge;

before(async () => {
  npm("ws"); npm("@foxglove/ws-protocol"); npm("@msgpack/msgpack");  // loudly missing, before anything starts
  key = await Key.start();
  key.run(program("PUB_IMU_PATH"));
  key.run(program("ADD_SERVER_PATH"));
  bridge = await key.bridge();
});

after(async () => { await key?.stop(); });

// A small JSON Schema check: each value has the type its schema says, recursively.
function conforms(schema, value, path = "") {
  if (schema.anyOf) {
    const errors = schema.anyOf.map((s) => conforms(s, value, path));
    return errors.some((e) => e === "") ? "" : errors[0];
  }
  const types = schema.type === undefined ? [] : [].concat(schema.type);
  const kind = value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value;
  if (types.length && !types.includes(kind) && !(kind === "integer" && types.includes("number")))
    return `${path || "(top)"} is ${kind}, the schema says ${types.join("|")}`;
  if (kind === "object" && schema.properties) {
    for (const [name, s] of Object.entries(schema.properties)) {
      if (!(name in value)) return `${path}${name} is missing`;
      const why = conforms(s, value[name], `${path}${name}.`);
      if (why) return why;
    }
  }
  if (kind === "array" && schema.items) for (const [i, v] of value.entries()) {
    const why = conforms(schema.items, v, `${path}[${i}].`);
    if (why) return why;
  }
  return "";
}

for (const subprotocol of ["foxglove.websocket.v1", "foxglove.sdk.v1"]) {
  test(`a client offering ${subprotocol} gets it back, serverInfo first, then pub_imu's channels`, async () => {
    const c = await foxglove(bridge.ws, subprotocol);
    try {
      assert.equal(c.ws.protocol, subprotocol);
      const info = c.seen.serverInfo;
      assert.ok(info, "serverInfo");
      for (const cap of ["clientPublish", "services", "connectionGraph"]) assert.ok(info.capabilities.includes(cap), cap);
      assert.deepEqual(info.supportedEncodings, ["json", "msgpack"]);
      assert.equal(info.metadata.key, key.key);
      const json = await until(() => c.channel("imu", "json"), "the imu json channel");
      assert.equal(json.schemaName, "gecko.msgs.Imu");
      assert.equal(json.schemaEncoding, "jsonschema");
      const schema = JSON.parse(json.schema);
      assert.equal(schema.type, "object");
      assert.ok(schema.properties.accel && schema.properties.accel.properties.x, "accel.x in the schema");
      assert.ok(c.channel("imu", "msgpack"), "the imu msgpack channel");
    } finally { c.client.close(); }
  });
}

test("json messages of imu decode and match the advertised schema; msgpack ones carry the same fields", async () => {
  const { decode } = npm("@msgpack/msgpack");
  const c = await foxglove(bridge.ws);
  try {
    const json = await until(() => c.channel("imu", "json"), "imu json channel");
    const raw = await until(() => c.channel("imu", "msgpack"), "imu msgpack channel");
    const schema = JSON.parse(json.schema);
    const jsonSub = c.client.subscribe(json.id);
    const rawSub = c.client.subscribe(raw.id);
    await until(() => c.seen.messages.filter((m) => m.subscriptionId === jsonSub).length >= 5 &&
      c.seen.messages.some((m) => m.subscriptionId === rawSub), "5 json and 1 msgpack imu messages");
    const before = BigInt(Date.now()) * 1000000n + 60000000000n;
    for (const m of c.seen.messages.filter((m) => m.subscriptionId === jsonSub)) {
      const message = JSON.parse(decoder.decode(m.data));
      assert.equal(conforms(schema, message), "");
      assert.ok(m.timestamp > 0n && m.timestamp < before, "a receive time in ns");
    }
    const packed = decode(new Uint8Array(c.seen.messages.find((m) => m.subscriptionId === rawSub).data.buffer,
      c.seen.messages.find((m) => m.subscriptionId === rawSub).data.byteOffset,
      c.seen.messages.find((m) => m.subscriptionId === rawSub).data.byteLength));
    assert.ok("accel" in packed && "stamp_ns" in packed, "msgpack imu has its fields");
    c.client.unsubscribe(jsonSub);
    c.client.unsubscribe(rawSub);
  } finally { c.client.close(); }
});

test("a publish reaches a C++ subscriber; a wrong shape is refused naming the field, and reaches nobody", async () => {
  const echo = key.run(program("GECKO_CLI_PATH"), ["echo", "imu_in", "--json", "--count", "1"]);
  const c = await foxglove(bridge.ws);
  try {
    await until(() => c.channel("imu", "json"), "imu channel (its type's schema)");
    await until(() => c.channel("imu_in", "json") || c.channel("imu_in", "msgpack") || true, "");
    const ch = c.client.advertise({ topic: "imu_in", encoding: "json", schemaName: "gecko.msgs.Imu" });
    // The wrong shape first: if it went through, echo (count 1) would print it.
    c.client.sendMessage(ch, encoder.encode(JSON.stringify({ stamp_ns: 1, acel: { x: 1.0, y: 2.0, z: 3.0 } })));
    const refused = await until(() => c.seen.statuses.find((s) => s.level === 2 && s.message.includes("acel")), "the refusal");
    assert.match(refused.message, /imu_in/);
    assert.match(refused.message, /nothing was published/);
    // Then a good one, until the subscriber's link is up and it arrives.
    await until(async () => {
      c.client.sendMessage(ch, encoder.encode(JSON.stringify({ stamp_ns: 42, frame_id: "from-the-browser", accel: { x: 1.5, y: 0.0, z: 9.81 } })));
      return echo.lines.some((l) => l.includes("from-the-browser")) || (await new Promise((r) => setTimeout(() => r(false), 200)));
    }, "gecko echo printing the published message");
    const line = echo.lines.find((l) => l.startsWith("{"));
    assert.ok(line.includes("from-the-browser") && line.includes("9.81"), line);
    const stats = await (await fetch(`${bridge.http}/api/stats`)).json();
    assert.ok(stats.refused_publishes >= 1 && stats.published >= 1, JSON.stringify(stats));
  } finally { c.client.close(); }
});

test("the add service: called with JSON and msgpack, a wrong request refused, an unknown service failed", async () => {
  const { encode, decode } = npm("@msgpack/msgpack");
  const c = await foxglove(bridge.ws);
  try {
    const add = await until(() => c.service("add"), "the add service");
    assert.equal(add.type, "examples.AddRequest->examples.AddReply");
    assert.ok(JSON.parse(add.request.schema).properties.a, "request schema");
    c.client.sendServiceCallRequest({ serviceId: add.id, callId: 1, encoding: "json", data: encoder.encode('{"a": 2.0, "b": 3.5}') });
    const r1 = await until(() => c.seen.responses.find((r) => r.callId === 1), "the json reply");
    assert.equal(r1.encoding, "json");
    assert.equal(JSON.parse(decoder.decode(r1.data)).sum, 5.5);
    c.client.sendServiceCallRequest({ serviceId: add.id, callId: 2, encoding: "msgpack", data: encode({ a: 1.25, b: 1.0 }, { forceFloat32: false }) });
    const r2 = await until(() => c.seen.responses.find((r) => r.callId === 2), "the msgpack reply");
    assert.equal(decode(new Uint8Array(r2.data.buffer, r2.data.byteOffset, r2.data.byteLength)).sum, 2.25);
    c.client.sendServiceCallRequest({ serviceId: add.id, callId: 3, encoding: "json", data: encoder.encode('{"a": 1.0, "c": 2.0}') });
    const f3 = await until(() => c.seen.failures.find((f) => f.callId === 3), "the refusal of a wrong request");
    assert.match(f3.message, /'c'/);
    c.client.sendServiceCallRequest({ serviceId: 99999, callId: 4, encoding: "json", data: encoder.encode("{}") });
    const f4 = await until(() => c.seen.failures.find((f) => f.callId === 4), "the failure of an unknown service");
    assert.match(f4.message, /no service 99999/);
  } finally { c.client.close(); }
});

test("the connection graph names imu's publisher and the add server", async () => {
  const c = await foxglove(bridge.ws);
  try {
    c.client.subscribeConnectionGraph();
    const g = await until(() => c.seen.graph.find((u) => u.publishedTopics.some((t) => t.name === "imu")), "a graph update with imu");
    assert.ok(g.publishedTopics.find((t) => t.name === "imu").publisherIds.length >= 1);
    await until(() => c.seen.graph.some((u) => u.advertisedServices.some((s) => s.name === "add")), "add in the graph");
  } finally { c.client.close(); }
});

test("bad requests get a status each, counted, and the client keeps being served", async () => {
  const c = await foxglove(bridge.ws);
  try {
    const before = await (await fetch(`${bridge.http}/api/stats`)).json();
    c.ws.send("{not json");
    c.ws.send(JSON.stringify({ op: "frobnicate" }));
    c.ws.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: 1, channelId: 987654 }] }));
    c.ws.send(Buffer.from([0x09, 1, 2, 3]));
    c.ws.send(Buffer.from([0x01, 7, 0, 0, 0, 1]));
    c.ws.send("[".repeat(10000));
    await until(() => c.seen.statuses.length >= 6, "six statuses");
    const text = c.seen.statuses.map((s) => s.message).join("\n");
    for (const want of [/malformed JSON/, /unknown op 'frobnicate'/, /channel 987654 is not advertised/,
      /unknown binary opcode 0x09/, /did not advertise it/, /nested deeper/])
      assert.match(text, want);
    assert.ok(c.seen.statuses.every((s) => s.level === 2));
    const after = await (await fetch(`${bridge.http}/api/stats`)).json();
    // Malformed: "{not json", opcode 0x09, the deep nesting; the unknown op, channel and publish are counted apart.
    assert.ok(after.malformed_requests - before.malformed_requests >= 3, JSON.stringify(after));
    assert.ok(after.unknown_ops - before.unknown_ops >= 1);
    assert.ok(after.refused_requests - before.refused_requests >= 1);
    assert.ok(after.refused_publishes - before.refused_publishes >= 1);
    // Still served.
    const imu = await until(() => c.channel("imu", "json"), "imu");
    const sub = c.client.subscribe(imu.id);
    await until(() => c.seen.messages.some((m) => m.subscriptionId === sub), "imu after the bad requests");
  } finally { c.client.close(); }
});

test("100k subscribe requests: refused or disconnected with a reason, and another client is not disturbed", async () => {
  const WebSocket = npm("ws");
  const other = await foxglove(bridge.ws);
  try {
    const imu = await until(() => other.channel("imu", "json"), "imu");
    const sub = other.client.subscribe(imu.id);
    await until(() => other.seen.messages.some((m) => m.subscriptionId === sub), "imu on the other client");
    const flood = new WebSocket(bridge.ws, ["foxglove.websocket.v1"]);
    let closed = null;
    flood.on("close", (code, reason) => (closed = { code, reason: reason.toString() }));
    flood.on("error", () => {});
    await new Promise((r) => flood.on("open", r));
    for (let i = 0; i < 100000 && !closed; i++)
      flood.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: i, channelId: 100000 + i }] }));
    const count = other.seen.messages.length;
    await until(() => other.seen.messages.length > count + 50, "the other client still getting imu (50 more messages)", 30000);
    // The bridge works through the flood at its own pace (slower under a sanitizer): wait until it has.
    let stats = null;
    const handled = async () => {
      stats = await (await fetch(`${bridge.http}/api/stats`)).json();
      return stats.refused_requests >= 1000 || stats.control_overflows >= 1;
    };
    const deadline = Date.now() + 60000;
    while (!(await handled()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    flood.close();
    assert.ok(stats.refused_requests >= 1000 || stats.control_overflows >= 1, JSON.stringify(stats));
  } finally { other.client.close(); }
});

test("an oversized message closes that connection with 1009 and a reason; the bridge serves on", async () => {
  const WebSocket = npm("ws");
  const ws = new WebSocket(bridge.ws, ["foxglove.websocket.v1"]);
  ws.on("error", () => {});
  await new Promise((r) => ws.on("open", r));
  const closed = new Promise((r) => ws.on("close", (code, reason) => r({ code, reason: reason.toString() })));
  ws.send(Buffer.alloc(17 << 20, 1));
  const { code, reason } = await closed;
  assert.equal(code, 1009);
  assert.match(reason, /larger than 16777216 bytes/);
  const c = await foxglove(bridge.ws);
  assert.ok(c.seen.serverInfo);
  c.client.close();
});

// An HTTP request as a WebSocket client's upgrade would be (fetch refuses
// Connection: Upgrade); resolves with the status and body of the answer.
function upgradeRequest(url, headers) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13",
      "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", ...headers } });
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    req.on("upgrade", (res, socket) => { socket.destroy(); resolve({ status: res.statusCode, body: "" }); });
    req.on("error", reject);
    req.end();
  });
}

test("upgrades without a Foxglove subprotocol, and bridges wanting a token, refuse before the upgrade", async () => {
  const res = await upgradeRequest(`${bridge.http}/`, {});
  assert.equal(res.status, 400);
  assert.match(res.body, /foxglove\.websocket\.v1/);
  const cross = await upgradeRequest(`${bridge.http}/`, { Origin: "http://evil.example", "Sec-WebSocket-Protocol": "foxglove.websocket.v1" });
  assert.equal(cross.status, 403);
  assert.match(cross.body, /--allow-origin http:\/\/evil\.example/);
  const own = await upgradeRequest(`${bridge.http}/`, { Origin: bridge.http, "Sec-WebSocket-Protocol": "foxglove.sdk.v1" });
  assert.equal(own.status, 101, "the bridge's own page may connect");

  const secured = await key.bridge(["--token", "s3cret"]);
  const WebSocket = npm("ws");
  const bad = new WebSocket(`${secured.ws}/?token=wrong`, ["foxglove.websocket.v1"]);
  const status = await new Promise((r) => { bad.on("unexpected-response", (req, res) => r(res.statusCode)); bad.on("open", () => r(101)); bad.on("error", () => {}); });
  assert.equal(status, 401);
  const good = await foxglove(`${secured.ws}/?token=s3cret`);
  assert.ok(good.seen.serverInfo);
  good.client.close();
  const header = await foxglove(secured.ws, "foxglove.websocket.v1", { headers: { Authorization: "Bearer s3cret" } });
  assert.ok(header.seen.serverInfo);
  header.client.close();
  const stats = await (await fetch(`${secured.http}/api/stats?token=s3cret`)).json();
  assert.equal(stats.refused_token, 1);
  await secured.child.stop();
});

test("in a secured key the bridge asks for the token derived from the secret, which gecko keygen prints", async () => {
  const secured = await Key.start({ secured: true });
  try {
    const b = await secured.bridge();
    const said = await b.child.line("is secured", 20000);
    const token = /\?token=([0-9a-f]{32})$/.exec(said)?.[1];
    assert.ok(token, said);
    const keygen = secured.run(program("GECKO_CLI_PATH"), ["keygen", "--key", secured.key, "--bridge-token"]);
    assert.equal((await keygen.exit).code, 0);
    assert.deepEqual(keygen.lines, [token]);
    const WebSocket = npm("ws");
    const bare = new WebSocket(b.ws, ["foxglove.websocket.v1"]);
    const status = await new Promise((r) => { bare.on("unexpected-response", (req, res) => r(res.statusCode)); bare.on("open", () => r(101)); bare.on("error", () => {}); });
    assert.equal(status, 401, "a client without the token is refused");
    const page = await fetch(`${b.http}/`);
    assert.equal(page.status, 401, "so is the page");
    const good = await foxglove(`${b.ws}/?token=${token}`);
    assert.equal(good.seen.serverInfo.metadata.key, secured.key);
    good.client.close();
    // --no-token: on loopback, served without one (a RoboticsAcademy frontend sends none).
    const open = await secured.bridge(["--no-token"]);
    const anyone = await foxglove(open.ws);
    assert.equal(anyone.seen.serverInfo.metadata.key, secured.key);
    anyone.client.close();
    assert.ok(!open.child.lines.some((l) => l.includes("is secured")), open.child.lines.join("\n"));
  } finally {
    await secured.stop();
  }
});

test("without a token the bridge refuses to listen beyond loopback, and says why", async () => {
  const child = key.run(program("GECKO_BRIDGE_PATH"), ["--listen", "0.0.0.0:0"]);
  const exit = await child.exit;
  assert.equal(exit.code, 2);
  assert.ok(child.lines.some((l) => l.includes("token")), child.lines.join("\n"));
});

test("`gecko bridge` runs gecko-bridge with the same arguments", async () => {
  const child = key.run(program("GECKO_CLI_PATH"), ["bridge", "--listen", "127.0.0.1:0"]);
  const line = await child.line("serving", 20000);
  const port = /:(\d+)\//.exec(line)[1];
  const c = await foxglove(`ws://127.0.0.1:${port}`);
  assert.equal(c.seen.serverInfo.metadata.key, key.key);
  c.client.close();
  await child.stop();
});

test("a publisher that goes and comes back: a subscription follows its topic; unwatched, the topic is unadvertised", async () => {
  const c = await foxglove(bridge.ws);
  try {
    let pub = key.run(program("BRIDGE_TEST_PUB_PATH"), ["--topic", "blink", "--rate", "50"]);
    const ch = await until(() => c.channel("blink", "json"), "the blink channel");
    const sub = c.client.subscribe(ch.id);
    const count = () => c.seen.messages.filter((m) => m.subscriptionId === sub).length;
    await until(() => count() >= 10, "10 blink messages");
    await pub.stop();
    const before = count();
    pub = key.run(program("BRIDGE_TEST_PUB_PATH"), ["--topic", "blink", "--rate", "50"]);
    await until(() => count() >= before + 10, "blink messages on the same subscription after the publisher came back", 30000);
    assert.equal(c.channel("blink", "json").id, ch.id, "the channel is the same");
    c.client.unsubscribe(sub);
    await pub.stop();
    await until(() => !c.channel("blink", "json") && !c.channel("blink", "msgpack"), "blink unadvertised", 30000);
    pub = key.run(program("BRIDGE_TEST_PUB_PATH"), ["--topic", "blink", "--rate", "50"]);
    const again = await until(() => c.channel("blink", "json"), "blink advertised again", 30000);
    assert.notEqual(again.id, ch.id, "a new channel id");
    await pub.stop();
  } finally { c.client.close(); }
});

test("geckocore restarts: the bridge keeps its clients and the key's topics flow again", async () => {
  const c = await foxglove(bridge.ws);
  try {
    const imu = await until(() => c.channel("imu", "json"), "imu");
    const sub = c.client.subscribe(imu.id);
    const count = () => c.seen.messages.filter((m) => m.subscriptionId === sub).length;
    await until(() => count() >= 10, "imu before the restart");
    await key.restartCore();
    const after = count();
    await until(() => count() >= after + 50, "imu after geckocore restarted", 30000);
    const other = await foxglove(bridge.ws);
    await until(() => other.channel("imu", "json"), "imu advertised to a client that connects after the restart", 30000);
    other.client.close();
  } finally { c.client.close(); }
});

test("with --tls-cert and --tls-key the bridge serves https and wss", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gecko-bridge-tls-"));
  try {
    const made = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { encoding: "utf8" });
    assert.equal(made.status, 0, `openssl (Debian's openssl package) made no certificate: ${made.stderr}`);
    const tls = await key.bridge(["--tls-cert", join(dir, "cert.pem"), "--tls-key", join(dir, "key.pem")]);
    assert.match(tls.ws, /^wss:/);
    const c = await foxglove(tls.ws, "foxglove.websocket.v1", { rejectUnauthorized: false });
    assert.equal(c.seen.serverInfo.metadata.key, key.key);
    await until(() => c.channel("imu", "json"), "imu over wss");
    c.client.close();
    await tls.child.stop();
  } finally { rmSync(dir, { recursive: true, force: true }); }
});
