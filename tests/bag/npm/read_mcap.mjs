// Reads an MCAP file with MCAP's own TypeScript readers (@mcap/core): the
// indexed reader (footer, summary, chunk indexes, CRCs validated) and the
// stream reader (every record from the start, CRCs validated), and prints
// what each found as one JSON object. Any error exits 1 with its message.
//
//   node read_mcap.mjs FILE [--messages]    (--messages: every message too)
import { open, readFile } from "node:fs/promises";
import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { FileHandleReadable } from "@mcap/nodejs";
import { loadDecompressHandlers } from "@mcap/support";

const [file, ...flags] = process.argv.slice(2);
const withMessages = flags.includes("--messages");
const hex = (bytes) => Buffer.from(bytes).toString("hex");

try {
  const decompressHandlers = await loadDecompressHandlers();
  const handle = await open(file, "r");
  const indexed = await McapIndexedReader.Initialize({ readable: new FileHandleReadable(handle), decompressHandlers });
  const out = { indexed: { messages: 0, topics: {}, channels: [], metadata: [], list: [] }, stream: { messages: 0, topics: {}, records: {} } };
  out.indexed.library = indexed.header.library;
  out.indexed.chunks = indexed.chunkIndexes.length;
  for (const ch of indexed.channelsById.values())
    out.indexed.channels.push({ id: ch.id, topic: ch.topic, messageEncoding: ch.messageEncoding, schemaId: ch.schemaId,
                                metadata: Object.fromEntries(ch.metadata) });
  if (indexed.statistics)
    out.indexed.statistics = { messageCount: Number(indexed.statistics.messageCount), channelCount: indexed.statistics.channelCount,
                               chunkCount: indexed.statistics.chunkCount };
  for await (const m of indexed.readMessages({ validateCrcs: true })) {
    const topic = indexed.channelsById.get(m.channelId).topic;
    out.indexed.messages++;
    out.indexed.topics[topic] = (out.indexed.topics[topic] ?? 0) + 1;
    if (withMessages)
      out.indexed.list.push([m.channelId, m.sequence, m.logTime.toString(), m.publishTime.toString(), hex(m.data)]);
  }
  for await (const md of indexed.readMetadata())
    out.indexed.metadata.push({ name: md.name, metadata: Object.fromEntries(md.metadata) });
  await handle.close();

  const stream = new McapStreamReader({ decompressHandlers, validateCrcs: true });
  stream.append(await readFile(file));
  const topics = new Map();
  for (let r; (r = stream.nextRecord()); ) {
    out.stream.records[r.type] = (out.stream.records[r.type] ?? 0) + 1;
    if (r.type === "Channel") topics.set(r.id, r.topic);
    if (r.type === "Message") {
      out.stream.messages++;
      const t = topics.get(r.channelId);
      out.stream.topics[t] = (out.stream.topics[t] ?? 0) + 1;
    }
  }
  out.stream.done = stream.done();
  console.log(JSON.stringify(out));
} catch (e) {
  console.error(`read_mcap: ${e?.stack ?? e}`);
  process.exit(1);
}
