// The bridge's page in headless Chromium (Debian's /usr/bin/chromium driven
// by playwright-core; no browser is downloaded): it loads from the bridge
// alone, lists the key's topics, plots a field of a 100 Hz IMU, draws a
// camera topic's image, and its publish form reaches a C++ subscriber. A
// screenshot is kept as a test artifact and checked for plot pixels.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Key, decodePng, launchChromium, program, until } from "./harness.mjs";
const sanitized = process.env.GECKO_TEST_SANITIZED === "1";

let key, bridge, browser;

before(async () => {
  key = await Key.start();
  key.run(program("PUB_IMU_PATH"));      // 100 Hz
  key.run(program("PUB_CAMERA_PATH"));   // 640x480 at 30 Hz
  bridge = await key.bridge();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await key?.stop();
});

// Waits for a condition in the page; on a timeout, fails with what the page
// and the bridge had done, so that a failure in CI says where it stopped.
async function waitOrExplain(page, fn, arg, timeout, what) {
  try {
    await page.waitForFunction(fn, arg, { timeout });
  } catch (err) {
    const state = await page.evaluate(() => ({
      ...window.geckoPage,
      connection: document.getElementById("connection").textContent,
      status: document.getElementById("status-line").textContent,
      selected: document.getElementById("selected-title").textContent,
      plot: document.getElementById("plot-title").textContent,
    })).catch((e) => `page unreadable: ${e.message}`);
    const stats = await fetch(`${bridge.http}/api/stats`).then((r) => r.text()).catch((e) => e.message);
    const figures = await fetch(`${bridge.http}/api/topics`).then((r) => r.text()).catch((e) => e.message);
    throw new Error(`waiting for ${what}: ${err.message}\npage: ${JSON.stringify(state)}\nbridge: ${stats}\ntopics: ${figures}`);
  }
}

test("the page lists the topics, plots a 100 Hz field, draws the camera, and publishes to a C++ subscriber", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const external = [];
  page.on("request", (r) => { if (!r.url().startsWith(bridge.http)) external.push(r.url()); });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${bridge.http}/`);

  // The topics, live.
  await page.waitForFunction(() => window.geckoPage.topics.includes("imu") && window.geckoPage.topics.includes("camera"), null, { timeout: 30000 });
  await page.waitForSelector('tr[data-topic="imu"] td:nth-child(2):has-text("gecko.msgs.Imu")', { timeout: 30000 });

  // Plot accel.x of imu: click the topic, then the field, as a person does
  // (250 ms between press and release, while the page redraws the message
  // ten times a second).
  await page.click('tr[data-topic="imu"]', { delay: 250 });
  await page.waitForSelector('span.field[data-path="accel.x"]', { timeout: 30000 });
  await page.click('span.field[data-path="accel.x"]', { delay: 250 });
  // 150 points of a 100 Hz field; under a sanitizer the bridge (camera frames
  // transcoded beside it) is several times slower: fewer points, a longer bound.
  const points = sanitized ? 30 : 150;
  await waitOrExplain(page, (n) => window.geckoPage.plotPoints >= n, points, sanitized ? 120000 : 30000,
    `${points} plot points`);

  // The publish form of imu's fields reaches a C++ subscriber.
  const echo = key.run(program("GECKO_CLI_PATH"), ["echo", "imu", "--json"]);
  await page.fill('#publish-fields input[name="frame_id"]', "typed-in-the-page");
  await page.fill('#publish-fields textarea[name="accel"]', '{"x": 0.5, "y": 0.25, "z": 12.5}');
  await until(async () => {
    await page.click('#publish button[type="submit"]');
    return echo.lines.some((l) => l.includes("typed-in-the-page")) || (await new Promise((r) => setTimeout(() => r(false), 300)));
  }, "gecko echo printing the page's message", 30000);
  assert.ok(echo.lines.find((l) => l.includes("typed-in-the-page")).includes("12.5"));

  // Screenshot with the plot, kept and checked: the plot's line has pixels of its colour.
  const artifacts = process.env.GECKO_TEST_ARTIFACTS || tmpdir();
  mkdirSync(artifacts, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));  // the form's button scrolled down: the whole plot in view
  const plotBox = await page.locator("#plot").boundingBox();
  const shot = await page.screenshot({ fullPage: false });
  writeFileSync(join(artifacts, "bridge-page-plot.png"), shot);
  const { width, pixels } = decodePng(shot);
  let line = 0;
  for (let y = Math.floor(plotBox.y); y < plotBox.y + plotBox.height; y++)
    for (let x = Math.floor(plotBox.x); x < plotBox.x + plotBox.width; x++) {
      const i = (y * width + x) * 4;
      if (pixels[i] < 80 && pixels[i + 1] > 60 && pixels[i + 1] < 140 && pixels[i + 2] > 140) line++;  // #1a5fb4
    }
  assert.ok(line > 50, `the plot in the screenshot has ${line} pixels of its line`);

  // The camera as an image with pixels that are not blank.
  await page.click('tr[data-topic="camera"]', { delay: 250 });
  await waitOrExplain(page, () => window.geckoPage.imageFrames >= 3, null, 30000, "3 camera frames drawn");
  const distinct = await page.evaluate(() => {
    const c = document.getElementById("image");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    const colours = new Set();
    for (let i = 0; i < d.length; i += 4 * 97) colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return colours.size;
  });
  assert.ok(distinct > 20, `the image has ${distinct} distinct colours`);
  writeFileSync(join(artifacts, "bridge-page-image.png"), await page.screenshot());

  assert.deepEqual(external, [], "the page loads nothing from elsewhere");
  assert.deepEqual(errors, [], "no script errors");
  console.log(`screenshots in ${artifacts}`);
  await page.close();
});
