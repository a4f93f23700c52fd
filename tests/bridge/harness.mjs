// The rig of the bridge's end-to-end tests: a key with its own geckocore on
// loopback, programs started against it (pub_imu, add_server, gecko echo,
// gecko-bridge), each read line by line with a deadline, and the npm
// packages the tests drive, taken from tests/bridge/npm (installed by
// scripts/install-deps). A missing package or program fails the test
// loudly: nothing is skipped.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateSync } from "node:zlib";

const npmRequire = createRequire(new URL("./npm/package.json", import.meta.url));

/// An npm package of tests/bridge/npm, or a clear failure saying how to install it.
export function npm(name) {
  try {
    return npmRequire(name);
  } catch (err) {
    throw new Error(`the npm package '${name}' is missing from tests/bridge/npm/node_modules: run ` +
      `scripts/install-deps (it runs 'npm ci' there). ${err.message}`);
  }
}

/// A program path from the environment ctest sets.
export function program(variable) {
  const path = process.env[variable];
  if (!path) throw new Error(`${variable} is not set: run this test through ctest (tests/bridge/CMakeLists.txt)`);
  return path;
}

/// Resolves when `check()` is true, polling every 20 ms; fails after `ms` with `what`.
export async function until(check, what, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/// A child process whose output lines are kept and can be waited for.
export class Child {
  constructor(path, args, env) {
    this.lines = [];
    this.waiters = [];
    this.exited = null;
    // A variable given as undefined is removed from the child's environment.
    const childEnv = { ...process.env, ...env };
    for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
    this.proc = spawn(path, args, { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
    this.name = path.split("/").pop();
    const take = (stream, tag) => {
      let buffer = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk) => {
        buffer += chunk;
        let nl;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          this.lines.push(line);
          if (process.env.GECKO_TEST_VERBOSE) console.error(`[${this.name}${tag}] ${line}`);
          for (const w of [...this.waiters]) if (w.match(line)) { this.waiters.splice(this.waiters.indexOf(w), 1); w.resolve(line); }
        }
      });
    };
    take(this.proc.stdout, "");
    take(this.proc.stderr, " stderr");
    this.exit = new Promise((resolve) => this.proc.on("exit", (code, signal) => { this.exited = { code, signal }; resolve(this.exited); }));
  }
  /// The first line (already read or to come) that `match` accepts.
  line(match, ms = 20000) {
    const test = typeof match === "string" ? (l) => l.includes(match) : typeof match === "function" ? match : (l) => match.test(l);
    const found = this.lines.find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w = { match: test, resolve };
      this.waiters.push(w);
      setTimeout(() => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) { this.waiters.splice(i, 1); reject(new Error(`${this.name} did not print ${match} within ${ms} ms; it printed:\n${this.lines.join("\n")}`)); }
      }, ms);
    });
  }
  async stop(signal = "SIGTERM") {
    if (this.exited) return this.exited;
    this.proc.kill(signal);
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 20000);
    const r = await this.exit;
    clearTimeout(timer);
    return r;
  }
}

let keys = 0;

/// A key with its own geckocore (unicast on loopback), and helpers to start
/// programs on it. stop() ends them all, the core last.
export class Key {
  /// `secured`: the key gets a secret (`gecko keygen` into the key's folder, GECKO_SECRET_FILE for every program).
  static async start({ secured = false } = {}) {
    const k = new Key();
    k.key = `bridge-${process.pid}-${keys++}`;
    k.dir = mkdtempSync(join(tmpdir(), "gecko-bridge-test-"));
    k.children = [];
    const unset = { GECKO_KEY: undefined, GECKO_CORE: undefined, GECKO_MULTICAST: undefined, GECKO_NO_MULTICAST: undefined,
      GECKO_INTERFACE: undefined, GECKO_NODE: undefined, GECKO_DISCOVERY: undefined, GECKO_SECRET_FILE: undefined };
    if (secured) {  // then every program of the key, geckocore first, finds the secret
      unset.GECKO_SECRET_FILE = join(k.dir, "key.secret");
      const keygen = new Child(program("GECKO_CLI_PATH"), ["keygen", "--key", k.key, "--secret-file", unset.GECKO_SECRET_FILE], unset);
      const exit = await keygen.exit;
      if (exit.code !== 0) throw new Error(`gecko keygen failed:\n${keygen.lines.join("\n")}`);
    }
    k.core = new Child(program("GECKOCORE_PATH"), ["--key", k.key, "--listen", "tcp://127.0.0.1:*", "--no-multicast", "--door", "0"], unset);
    const line = await k.core.line("listening on", 20000);
    const port = /tcp:\/\/127\.0\.0\.1:(\d+)/.exec(line)[1];
    k.unset = unset;
    k.env = { ...unset, GECKO_KEY: k.key, GECKO_CORE: `127.0.0.1:${port}`, GECKO_NO_MULTICAST: "1", GECKO_IPC_DIR: k.dir };
    return k;
  }
  /// Stops geckocore and starts it again on the same port, as after a crash and a restart.
  async restartCore() {
    await this.core.stop();
    const port = this.env.GECKO_CORE.split(":")[1];
    this.core = new Child(program("GECKOCORE_PATH"), ["--key", this.key, "--listen", `tcp://127.0.0.1:${port}`,
      "--no-multicast", "--door", "0"], this.unset);
    await this.core.line("listening on", 20000);
  }
  run(path, args = [], env = {}) {
    const c = new Child(path, args, { ...this.env, ...env });
    this.children.push(c);
    return c;
  }
  /// gecko-bridge on an ephemeral loopback port; resolves with {child, port, url}.
  async bridge(args = [], env = {}) {
    const child = this.run(program("GECKO_BRIDGE_PATH"), ["--listen", "127.0.0.1:0", ...args], env);
    const line = await child.line("serving", 20000);
    const m = /(https?):\/\/[^:]+:(\d+)\//.exec(line);
    const port = Number(m[2]);
    return { child, port, http: `${m[1]}://127.0.0.1:${port}`, ws: `${m[1] === "https" ? "wss" : "ws"}://127.0.0.1:${port}` };
  }
  async stop() {
    for (const c of this.children.reverse()) await c.stop();
    await this.core.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/// A Foxglove client of the npm package, connected with `subprotocol`, that
/// records everything the bridge says.
export async function foxglove(url, subprotocol = "foxglove.websocket.v1", options = {}) {
  const WebSocket = npm("ws");
  const { FoxgloveClient } = npm("@foxglove/ws-protocol");
  const ws = new WebSocket(url, [subprotocol], options);
  const client = new FoxgloveClient({ ws });
  const seen = { serverInfo: null, channels: new Map(), services: new Map(), statuses: [], messages: [], responses: [], failures: [], graph: [], closed: null };
  client.on("serverInfo", (m) => (seen.serverInfo = m));
  client.on("advertise", (chs) => chs.forEach((c) => seen.channels.set(c.id, c)));
  client.on("unadvertise", (ids) => ids.forEach((id) => seen.channels.delete(id)));
  client.on("advertiseServices", (ss) => ss.forEach((s) => seen.services.set(s.id, s)));
  client.on("status", (s) => seen.statuses.push(s));
  client.on("message", (m) => seen.messages.push(m));
  client.on("serviceCallResponse", (r) => seen.responses.push(r));
  client.on("serviceCallFailure", (f) => seen.failures.push(f));
  client.on("connectionGraphUpdate", (g) => seen.graph.push(g));
  client.on("close", (e) => (seen.closed = e));
  client.on("error", () => {});
  await until(() => seen.serverInfo || seen.closed, "serverInfo");
  return { client, ws, seen,
    channel: (topic, encoding) => [...seen.channels.values()].find((c) => c.topic === topic && c.encoding === encoding),
    service: (name) => [...seen.services.values()].find((s) => s.name === name) };
}

// The RGBA pixels of a PNG (8-bit RGB or RGBA, not interlaced): what Chromium's screenshots are.
export function decodePng(png) {
  let at = 8, width = 0, height = 0, colorType = 0;
  const idat = [];
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString("ascii", at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") { width = data.readUInt32BE(0); height = data.readUInt32BE(4); colorType = data[9]; }
    if (type === "IDAT") idat.push(data);
    at += 12 + length;
  }
  const bpp = colorType === 6 ? 4 : 3;
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  const out = Buffer.alloc(width * height * 4);
  const prev = Buffer.alloc(stride), cur = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    raw.copy(cur, 0, y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? cur[x - bpp] : 0, b = prev[x], c = x >= bpp ? prev[x - bpp] : 0;
      let v = cur[x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) { const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c); v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c; }
      cur[x] = v & 255;
    }
    for (let x = 0; x < width; x++) {
      out[(y * width + x) * 4] = cur[x * bpp]; out[(y * width + x) * 4 + 1] = cur[x * bpp + 1];
      out[(y * width + x) * 4 + 2] = cur[x * bpp + 2]; out[(y * width + x) * 4 + 3] = bpp === 4 ? cur[x * bpp + 3] : 255;
    }
    cur.copy(prev);
  }
  return { width, height, pixels: out };
}

/// Debian's chromium (or GECKO_CHROMIUM), headless, driven by playwright-core; no browser is downloaded.
export async function launchChromium() {
  const { chromium } = npm("playwright-core");
  const path = process.env.GECKO_CHROMIUM || "/usr/bin/chromium";
  return chromium.launch({
    executablePath: path,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run"],
  }).catch((err) => { throw new Error(`cannot start ${path} (scripts/install-deps installs chromium): ${err.message}`); });
}
