// An installed gecko-bridge serves its page: the prefix `cmake --install`
// made (the package.install fixture, GECKO_TEST_PREFIX), moved elsewhere,
// finds its page in <prefix>/share/gecko/bridge/www beside its bin/, with
// the browser libraries the install step put there; and the installed
// `gecko bridge` runs the installed gecko-bridge.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Key, foxglove, npm, program } from "./harness.mjs";

let key, moved;

before(async () => {
  npm("ws"); npm("@foxglove/ws-protocol");
  const prefix = program("GECKO_TEST_PREFIX");
  for (const f of ["bin/gecko-bridge", "bin/gecko", "share/gecko/bridge/www/index.html"])
    assert.ok(existsSync(join(prefix, f)), `${f} is not installed in ${prefix}`);
  // Moved: the page is found beside the program, not at the prefix it was configured with, nor in the source tree.
  moved = mkdtempSync(join(tmpdir(), "gecko-bridge-installed-"));
  cpSync(join(prefix, "bin"), join(moved, "bin"), { recursive: true });
  cpSync(join(prefix, "share", "gecko", "bridge"), join(moved, "share", "gecko", "bridge"), { recursive: true });
  const index = join(moved, "share", "gecko", "bridge", "www", "index.html");
  writeFileSync(index, readFileSync(index, "utf8") + "<!-- the moved prefix's page -->\n");
  key = await Key.start();
});

after(async () => {
  await key?.stop();
  if (moved) rmSync(moved, { recursive: true, force: true });
});

async function servesItsPage(child) {
  const line = await child.line("serving", 20000);
  const port = /:(\d+)\//.exec(line)[1];
  const http = `http://127.0.0.1:${port}`;
  const page = await fetch(`${http}/`);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /the moved prefix's page/, "the page comes from the prefix beside the program");
  // The browser libraries are installed with it (scripts/install-deps fetched them; no CDN at run time).
  for (const [path, file] of [["/vendor/uPlot.iife.min.js", "npm/node_modules/uplot/dist/uPlot.iife.min.js"],
    ["/vendor/msgpack.min.js", "npm/node_modules/@msgpack/msgpack/dist.umd/msgpack.min.js"],
    ["/vendor/ace.js", "npm/node_modules/ace-builds/src-min-noconflict/ace.js"],
    ["/app.js", "app.js"]]) {
    const res = await fetch(`${http}${path}`);
    assert.equal(res.status, 200, `${path}: ${res.status}`);
    assert.equal(await res.text(), readFileSync(join(moved, "share", "gecko", "bridge", "www", file), "utf8"), path);
  }
  assert.ok(!child.lines.some((l) => l.includes("incomplete")), child.lines.join("\n"));
  const c = await foxglove(`ws://127.0.0.1:${port}`);
  assert.equal(c.seen.serverInfo.metadata.key, key.key);
  c.client.close();
  await child.stop();
}

test("an installed gecko-bridge, its prefix moved, serves the page installed beside it", async () => {
  await servesItsPage(key.run(join(moved, "bin", "gecko-bridge"), ["--listen", "127.0.0.1:0"], { GECKO_BRIDGE_WWW: undefined }));
});

test("the installed `gecko bridge` runs the gecko-bridge beside it", async () => {
  await servesItsPage(key.run(join(moved, "bin", "gecko"), ["bridge", "--listen", "127.0.0.1:0"], { GECKO_BRIDGE_WWW: undefined }));
});
