// The page's simulation view (docs/ACADEMY.md, "The page") in headless
// Chromium, against real programs on loopback: geckocore, gecko-bridge
// --academy-sim-command (whose Start runs gecko-sim) and the brain runner
// it starts. Reset's button is disabled from its press until its answer
// reaches the page's socket, then enabled; a brain loaded from the editor
// shows an image, and a screenshot shows it. With no simulation to open,
// Start's button comes back after the page's 10 s timeout, with the error.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Key, decodePng, launchChromium, program, until } from "./harness.mjs";

const WAIT = 30000;  // ms: a hang guard, not a speed claim
let browser;
const keys = [];

before(async () => { browser = await launchChromium(); });
after(async () => {
  await browser?.close();
  for (const k of keys) await k.stop();
});

// Quoted as a shell would: the clone's path may hold spaces.
const quoted = (path) => "'" + path.replaceAll("'", "'\\''") + "'";

async function academyBridge(args) {
  const key = await Key.start();
  keys.push(key);
  const bridge = await key.bridge(["--academy-python", program("GECKO_ACADEMY_PYTHON"), ...args]);
  await bridge.child.line("RoboticsAcademy endpoints", 20000);
  return bridge;
}

// A page on the bridge whose manager socket's frames are recorded as the
// browser received them (playwright's view of the socket, not the page's).
async function openPage(bridge) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const seen = { manager: [], external: [], errors: [] };
  page.on("request", (r) => { if (!r.url().startsWith(bridge.http) && !r.url().startsWith("data:")) seen.external.push(r.url()); });
  page.on("pageerror", (e) => seen.errors.push(e.message));
  page.on("websocket", (ws) => {
    if (ws.url().includes("/academy/manager"))
      ws.on("framereceived", (f) => { try { seen.manager.push(JSON.parse(f.payload)); } catch (err) { /* not JSON */ } });
  });
  await page.goto(`${bridge.http}/`);
  await page.click("#simulation-tab", { timeout: WAIT });
  await waitOrExplain(page, bridge, () => {
    const c = window.geckoPage.simulation.connected;
    return c.manager && c.code && c.gui;
  }, "the view's three academy sockets");
  return { page, seen };
}

// Waits for a condition in the page; on a timeout, fails with what the view
// had done and the bridge's output, so that a failure in CI says where it stopped.
async function waitOrExplain(page, bridge, fn, what, arg = null) {
  try {
    await page.waitForFunction(fn, arg, { timeout: WAIT });
  } catch (err) {
    const state = await page.evaluate(() => ({
      ...window.geckoPage.simulation,
      result: document.getElementById("sim-result").textContent,
      brainState: document.getElementById("brain-state").textContent,
      errors: document.getElementById("brain-errors").textContent,
      buttons: [...document.querySelectorAll("#simulation-view button")].map((b) => `${b.id}${b.disabled ? " disabled" : ""}`),
    })).catch((e) => `page unreadable: ${e.message}`);
    throw new Error(`waiting for ${what}: ${err.message}\nview: ${JSON.stringify(state)}\n` +
      `bridge said:\n${bridge.child.lines.slice(-30).join("\n")}`);
  }
}

// Records each change of `selector`'s disabled state with the page's clock,
// the clock the view stamps its answers with (sim.acks[].at).
async function watchDisabled(page, selector) {
  await page.evaluate((s) => {
    const button = document.querySelector(s);
    window.disabledLog = [];
    new MutationObserver(() => window.disabledLog.push({ disabled: button.disabled, at: performance.now() }))
      .observe(button, { attributes: true, attributeFilter: ["disabled"] });
  }, selector);
}

const answerTo = (command) => (m) => m.data && m.data.command === command && (m.command === "PingDone" || m.command === "error");

// Halves of two colours: JPEG keeps them close enough to find in a screenshot.
const LEFT = [240, 120, 0], RIGHT = [0, 90, 220];
const BRAIN = `import GUI
W, H = 640, 480
row = bytes(${JSON.stringify(LEFT)}) * (W // 2) + bytes(${JSON.stringify(RIGHT)}) * (W // 2)
image = row * H
while True:
    GUI.show_image(image, width=W, height=H)
`;

test("reset's button waits for its answer; a brain from the editor shows its image", async () => {
  const simCommand = `${quoted(program("GECKO_SIM_PATH"))} --robots arm --joints 2`;
  const bridge = await academyBridge(["--academy-sim-command", simCommand]);
  const { page, seen } = await openPage(bridge);

  // Start: the bridge runs gecko-sim; its answer comes once the simulation answers.
  // Waited for on the socket: on a loaded machine it may outlast the page's 10 s.
  await page.click("#sim-start");
  const opened = await until(() => seen.manager.find(answerTo("open")), "open's answer on the page's socket", WAIT);
  assert.equal(opened.command, "PingDone", `open's answer: ${JSON.stringify(opened)}`);
  await waitOrExplain(page, bridge, () => !document.getElementById("sim-start").disabled, "Start enabled again");

  // A brain that does not compile: its error, with its line, under the editor and in it.
  await page.evaluate(() => ace.edit("editor").setValue("x = 1\nwhile True:\n    y = (x +\n", -1));
  await page.click("#brain-load");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.brain === "error", "#erro for code that does not compile");
  const { listed, marked } = await page.evaluate(() => ({
    listed: document.getElementById("brain-errors").textContent,
    marked: ace.edit("editor").session.getAnnotations().map((a) => a.row),
  }));
  assert.match(listed, /^line 3: SyntaxError/, listed);
  assert.deepEqual(marked, [2], "the editor marks line 3");

  // Reset: disabled at the press, enabled only once its PingDone is in.
  await watchDisabled(page, "#sim-reset");
  await page.click("#sim-reset");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.acks.some((a) => a.command === "reset") &&
    !document.getElementById("sim-reset").disabled, "reset's answer and its button enabled");
  const { log, ack, state, time } = await page.evaluate(() => ({
    log: window.disabledLog,
    ack: window.geckoPage.simulation.acks.find((a) => a.command === "reset"),
    state: document.getElementById("fig-state").textContent,
    time: document.getElementById("fig-time").textContent,
  }));
  assert.equal(log.length, 2, `the button changed twice: ${JSON.stringify(log)}`);
  assert.ok(log[0].disabled && log[0].at <= ack.at, `disabled at the press, before the answer: ${JSON.stringify({ log, ack })}`);
  assert.ok(!log[1].disabled && log[1].at >= ack.at, `enabled after the answer: ${JSON.stringify({ log, ack })}`);
  assert.equal(ack.answer, "PingDone");
  const reset = seen.manager.find(answerTo("reset"));
  assert.equal(reset?.command, "PingDone", "the socket carried reset's PingDone");
  assert.equal(reset.data.status.simulated_time, 0);
  assert.equal(state, "paused", "the figures show the reset's state");
  assert.equal(time, "0.00 s");
  console.log(`reset answered ${ack.ms.toFixed(1)} ms after its press`);

  await page.click("#sim-resume");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.acks.some((a) => a.command === "resume"), "resume's answer");
  // A brain typed into the editor (through Ace's API: typing would re-indent it),
  // loaded once the simulation is reset and resumed (its runner's HAL steps
  // the simulation from then on), and played.
  await page.evaluate((code) => ace.edit("editor").setValue(code, -1), BRAIN);
  await page.click("#brain-load");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.brain === "loaded", "#exec for the loaded brain");

  await page.click("#brain-play");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.brain === "playing", "#play");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.guiImages >= 3 &&
    document.querySelectorAll("#gui-pose tr").length === 2, "3 GUI images drawn and the arm's 2 joints");
  const pose = await page.locator("#gui-pose").textContent();
  assert.match(pose, /arm\/joint1.*rad.*arm\/joint2.*rad/s);
  await waitOrExplain(page, bridge, () => /Hz of 10 Hz/.test(document.getElementById("fig-brain").textContent), "the brain's frequency figure");
  // The figures live: steps counted past resume's answer come from the status topic.
  const resumed = seen.manager.find(answerTo("resume")).data.status.steps;
  await waitOrExplain(page, bridge, (n) => Number(document.getElementById("fig-steps").textContent) > n + 20 &&
    document.getElementById("fig-state").textContent === "running", "steps from the status topic", resumed);

  // The screenshot shows the image: its region is half the left colour, half the right.
  const box = await page.locator("#gui-image").boundingBox();
  const shot = await page.screenshot();
  const artifacts = process.env.GECKO_TEST_ARTIFACTS || tmpdir();
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(join(artifacts, "bridge-academy-page.png"), shot);
  const { width, pixels } = decodePng(shot);
  const near = (i, c) => Math.abs(pixels[i] - c[0]) < 40 && Math.abs(pixels[i + 1] - c[1]) < 40 && Math.abs(pixels[i + 2] - c[2]) < 40;
  let left = 0, right = 0, all = 0;
  for (let y = Math.ceil(box.y) + 2; y < box.y + box.height - 2; y++)
    for (let x = Math.ceil(box.x) + 2; x < box.x + box.width - 2; x++) {
      const i = (y * width + x) * 4;
      all++;
      if (near(i, LEFT) && x < box.x + box.width / 2) left++;
      if (near(i, RIGHT) && x >= box.x + box.width / 2) right++;
    }
  assert.ok(left > 0.4 * all && right > 0.4 * all,
    `the GUI image's region (${JSON.stringify(box)}) has ${left} left-colour and ${right} right-colour pixels of ${all}`);

  await page.click("#brain-stop");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.brain === "stopped", "#stop");
  assert.deepEqual(seen.external, [], "the page loads nothing from elsewhere");
  assert.deepEqual(seen.errors, [], "no script errors");
  console.log(`screenshot in ${artifacts}`);
  await page.close();
});

test("with no answer within 10 s, Start's button is enabled again and says so", async () => {
  // No simulation command and none running: open waits 15 s for one, longer than the page's 10 s.
  const bridge = await academyBridge(["--academy"]);
  const { page, seen } = await openPage(bridge);
  await watchDisabled(page, "#sim-start");
  await page.click("#sim-start");
  await waitOrExplain(page, bridge, () => window.geckoPage.simulation.timeouts.includes("open") &&
    !document.getElementById("sim-start").disabled, "Start's timeout");
  const { log, result } = await page.evaluate(() => ({
    log: window.disabledLog, result: document.getElementById("sim-result").textContent,
  }));
  assert.equal(log.length, 2, JSON.stringify(log));
  const held = log[1].at - log[0].at;
  assert.ok(log[0].disabled && !log[1].disabled && held >= 9900, `disabled for ${held} ms: ${JSON.stringify(log)}`);
  assert.match(result, /no answer to open within 10 s/);
  assert.equal(seen.manager.find(answerTo("open")), undefined, "no answer had come");
  // The refusal that comes later is shown as late.
  await waitOrExplain(page, bridge, () => /late/.test(document.getElementById("sim-result").textContent), "open's late refusal");
  assert.match(await page.locator("#sim-result").textContent(), /open refused: no simulation 'sim' answers/);
  assert.deepEqual(seen.errors, [], "no script errors");
  await page.close();
});
