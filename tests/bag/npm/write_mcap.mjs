// Writes an MCAP file with MCAP's own TypeScript writer (@mcap/core),
// zstd-compressed chunks, for gecko's reader to open: two msgpack channels
// (no schema, Gecko's metadata), one json channel with a jsonschema, a
// Metadata record and an attachment.
//
//   node write_mcap.mjs FILE COUNT
import { open } from "node:fs/promises";
import { McapWriter } from "@mcap/core";
import { FileHandleWritable } from "@mcap/nodejs";
import zstd from "@foxglove/wasm-zstd";

const [file, countText] = process.argv.slice(2);
const count = Number(countText ?? 100);
try {
  await zstd.isLoaded;
  const handle = await open(file, "w");
  const writer = new McapWriter({
    writable: new FileHandleWritable(handle),
    chunkSize: 4096,
    compressChunk: (data) => ({ compression: "zstd", compressedData: zstd.compress(data) }),
  });
  await writer.start({ profile: "", library: "mcap-ts write_mcap.mjs" });
  const imu = await writer.registerChannel({ topic: "imu", messageEncoding: "msgpack", schemaId: 0,
    metadata: new Map([["gecko.type_name", "test.Reading"]]) });
  const odom = await writer.registerChannel({ topic: "odom", messageEncoding: "msgpack", schemaId: 0, metadata: new Map() });
  const schema = await writer.registerSchema({ name: "test.Reading", encoding: "jsonschema",
    data: new TextEncoder().encode('{"type":"object","properties":{"n":{"type":"integer"}}}') });
  const json = await writer.registerChannel({ topic: "/json/imu", messageEncoding: "json", schemaId: schema, metadata: new Map() });
  for (let i = 0; i < count; i++) {
    const t = 1_000_000_000n + BigInt(i) * 1_000_000n;
    // msgpack {"n": i} for i < 128: fixmap(1), fixstr "n", positive fixint
    const msgpack = new Uint8Array([0x81, 0xa1, 0x6e, i & 0x7f]);
    await writer.addMessage({ channelId: i % 2 ? odom : imu, sequence: i + 1, logTime: t, publishTime: t, data: msgpack });
    if (i % 10 === 0)
      await writer.addMessage({ channelId: json, sequence: i + 1, logTime: t, publishTime: t,
                                data: new TextEncoder().encode(JSON.stringify({ n: i })) });
  }
  await writer.addMetadata({ name: "gecko", metadata: new Map([["key", "from-node"]]) });
  await writer.addAttachment({ name: "note.txt", mediaType: "text/plain", logTime: 1n, createTime: 1n,
                               data: new TextEncoder().encode("hello") });
  await writer.end();
  await handle.close();
} catch (e) {
  console.error(`write_mcap: ${e?.stack ?? e}`);
  process.exit(1);
}
