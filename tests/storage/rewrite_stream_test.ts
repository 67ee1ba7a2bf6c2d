/**
 * The backup file's rewrite (retention, erasure) streamed: files larger than one read, lines over
 * the cap, bytes kept as they are, and what is held at once.
 */
import assert from "node:assert/strict";
import { MAX_LINE_BYTES, READ_CHUNK_BYTES } from "../../lib/common/line_reader.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { formatRecord } from "../../lib/storage/backup.ts";
import { keptByAge } from "../../lib/storage/retention.ts";
import { rewriteBackup } from "../../lib/storage/rewrite.ts";
import { MemoryFs } from "../support/memory_fs.ts";
import { rewriteFs } from "./_rewrite_setup.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 25, 12);
const PATH = "/data/messages.jsonl";
const encoder = new TextEncoder();

/** A record `days` before NOW. */
function record(days: number, id: string): string {
  return formatRecord({
    ts: new Date(NOW - days * DAY).toISOString().slice(0, 19) + "Z",
    id,
    name: "Ann",
    contact: `${id}@example.org`,
    message: `message ${id} `.repeat(8),
    ip: "203.0.113.7",
    messenger_ok: true,
    messenger_error: null,
  });
}

function logger() {
  const lines: LogFields[] = [];
  return { log: (_level: string, fields: LogFields) => void lines.push(fields), lines };
}

/** A file system in memory holding `bytes` at PATH; the largest read asked of it is noted. */
async function fileWith(bytes: Uint8Array) {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const file = await memory.open(PATH, { write: true, create: true });
  await file.write(bytes);
  file.close();
  let largestRead = 0;
  const { fs } = rewriteFs(memory);
  const open: typeof fs.open = async (path, options) => {
    const opened = await fs.open(path, options);
    return {
      ...opened,
      read: (into) => ((largestRead = Math.max(largestRead, into.byteLength)), opened.read(into)),
      write: (data) => opened.write(data),
      seek: (offset, whence) => opened.seek(offset, whence),
      syncData: () => opened.syncData(),
      stat: () => opened.stat(),
      close: () => opened.close(),
    };
  };
  return { memory, fs: { ...fs, open }, largestRead: () => largestRead };
}

Deno.test("retention on a backup file of many reads drops the old records, keeps the rest as they were, byte for byte (invalid UTF-8 included), reading a chunk at a time", async () => {
  const old = Array.from({ length: 1500 }, (_, i) => record(100, `old${i}`)).join("");
  const young = Array.from({ length: 1500 }, (_, i) => record(1, `new${i}`)).join("");
  const odd = new Uint8Array([0xff, 0xfe, 0x41, 10]); // not UTF-8: kept as it is
  const bytes = new Uint8Array([
    ...encoder.encode(young.slice(0, young.length / 3)), // before the first record that goes
    ...odd,
    ...encoder.encode(old),
    ...encoder.encode(young.slice(young.length / 3)),
    ...odd,
  ]);
  assert.ok(bytes.byteLength > 8 * READ_CHUNK_BYTES);
  const { memory, fs, largestRead } = await fileWith(bytes);
  const { log, lines } = logger();
  const outcome = await rewriteBackup(fs, PATH, keptByAge(NOW - 90 * DAY), log);
  assert.deepEqual(outcome, { kept: 1502, removed: 1500 });
  const kept = new Uint8Array(
    await memory.open(PATH, { read: true }).then(async (file) => {
      const out = new Uint8Array(bytes.byteLength);
      let size = 0;
      for (let n; (n = await file.read(out.subarray(size))) !== null && n > 0;) size += n;
      return out.subarray(0, size);
    }),
  );
  assert.deepEqual(
    kept,
    new Uint8Array([
      ...encoder.encode(young.slice(0, young.length / 3)),
      ...odd,
      ...encoder.encode(young.slice(young.length / 3)),
      ...odd,
    ]),
  );
  assert.ok(largestRead() <= READ_CHUNK_BYTES, `reads of at most ${READ_CHUNK_BYTES} bytes`);
  assert.deepEqual(lines, []);
});

Deno.test("a line over the cap is kept by a rewrite, copied as it is without being read as text, and logged as oversized", async () => {
  const huge = `{"ts":"2020-01-01T00:00:00Z","message":"${"x".repeat(MAX_LINE_BYTES + 10)}"}`;
  const text = record(100, "a") + huge + "\n" + record(1, "b") + huge;
  const { memory, fs } = await fileWith(encoder.encode(text));
  const { log, lines } = logger();
  // Every whole line the rule is asked about fits the cap.
  const asked: number[] = [];
  const keep = keptByAge(NOW - 90 * DAY);
  const outcome = await rewriteBackup(
    fs,
    PATH,
    (line) => (asked.push(line.length), keep(line)),
    log,
  );
  assert.deepEqual(outcome, { kept: 3, removed: 1 });
  // The torn last line too, made whole.
  assert.equal(memory.readText(PATH), huge + "\n" + record(1, "b") + huge + "\n");
  assert.ok(asked.every((length) => length <= MAX_LINE_BYTES));
  assert.deepEqual(lines, [{ event: "backup_line_oversized", lines: 2, max: MAX_LINE_BYTES }]);
});

Deno.test("a dry run over a file of many reads counts every line that would go and writes nothing", async () => {
  const text = Array.from({ length: 3000 }, (_, i) => record(i % 2 === 0 ? 100 : 1, `r${i}`))
    .join("");
  const { memory, fs } = await fileWith(encoder.encode(text));
  const outcome = await rewriteBackup(fs, PATH, keptByAge(NOW - 90 * DAY), logger().log, true);
  assert.deepEqual(outcome, { kept: 1500, removed: 1500 });
  assert.equal(memory.readText(PATH), text);
  assert.equal(memory.exists(`${PATH}.rewrite`), false);
});
