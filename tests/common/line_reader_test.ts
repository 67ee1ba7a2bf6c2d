import assert from "node:assert/strict";
import {
  COLLECT_EVERY_BYTES,
  type FileLine,
  MAX_LINE_BYTES,
  readLines,
} from "../../lib/common/line_reader.ts";
import { collectGarbage } from "../../lib/common/collect_garbage.ts";

const encoder = new TextEncoder();

/** A file holding `bytes`, read at most `chunk` bytes at a time (the reader's own size aside). */
function source(bytes: Uint8Array, chunk = Infinity) {
  let at = 0;
  let reads = 0;
  return {
    read(into: Uint8Array): Promise<number | null> {
      if (at >= bytes.byteLength) return Promise.resolve(null);
      const n = Math.min(into.byteLength, chunk, bytes.byteLength - at);
      into.set(bytes.subarray(at, at + n));
      at += n;
      reads++;
      return Promise.resolve(n);
    },
    get reads() {
      return reads;
    },
  };
}

/** Every line, copied out (a line's bytes are the reader's buffer until the next line). */
async function linesOf(
  bytes: Uint8Array,
  options: Parameters<typeof readLines>[1] = {},
): Promise<Array<Omit<FileLine, "bytes"> & { bytes?: number[] }>> {
  const lines = [];
  for await (const { bytes: raw, ...line } of readLines(source(bytes), options)) {
    lines.push({ ...line, ...(raw === undefined ? {} : { bytes: [...raw] }) });
  }
  return lines;
}

Deno.test("every read size gives the same lines: boundaries inside a multi-byte UTF-8 character or right beside a \\n change nothing", async () => {
  const text = "é€\n𝄞x\n\nplain ascii\nü\n";
  const bytes = encoder.encode(text);
  const expected = ["é€", "𝄞x", "", "plain ascii", "ü"];
  for (let chunkBytes = 1; chunkBytes <= bytes.byteLength + 1; chunkBytes++) {
    const lines = await linesOf(bytes, { chunkBytes });
    assert.deepEqual(lines.map((line) => line.text), expected, `reads of ${chunkBytes}`);
    assert.ok(lines.every((line) => line.whole), `reads of ${chunkBytes}`);
    // Offsets are bytes: each line's bytes are the file's between start and end.
    for (const line of lines) {
      assert.deepEqual(line.bytes, [...bytes.subarray(line.start, line.end)]);
      assert.equal(bytes[line.end], 10);
    }
  }
});

Deno.test("a last line without its line break comes last, not whole, whatever the read size", async () => {
  const bytes = encoder.encode('{"ts":"a"}\n{"ts":"tö');
  for (let chunkBytes = 1; chunkBytes <= bytes.byteLength; chunkBytes++) {
    const lines = await linesOf(bytes, { chunkBytes });
    assert.deepEqual(
      lines.map(({ text, whole }) => ({ text, whole })),
      [{ text: '{"ts":"a"}', whole: true }, { text: '{"ts":"tö', whole: false }],
    );
    assert.equal(lines[1]!.end, bytes.byteLength);
  }
  assert.deepEqual(await linesOf(new Uint8Array(0)), []);
});

Deno.test("a line over the cap is reported by its place only (no text, no bytes), and the lines around it are read", async () => {
  const long = "x".repeat(25);
  const bytes = encoder.encode(`short\n${long}\nafter\n${long}`);
  for (const chunkBytes of [1, 4, 10, 64]) {
    const lines = await linesOf(bytes, { chunkBytes, maxLineBytes: 10 });
    assert.deepEqual(lines, [
      { text: "short", bytes: [...encoder.encode("short")], start: 0, end: 5, whole: true },
      { text: undefined, start: 6, end: 31, whole: true },
      { text: "after", bytes: [...encoder.encode("after")], start: 32, end: 37, whole: true },
      // A torn last line over the cap too.
      { text: undefined, start: 38, end: 63, whole: false },
    ], `reads of ${chunkBytes}`);
  }
  // At the cap exactly, a line is read.
  const exact = await linesOf(encoder.encode("y".repeat(10) + "\n"), { maxLineBytes: 10 });
  assert.equal(exact[0]!.text, "y".repeat(10));
  assert.ok(MAX_LINE_BYTES >= 64 * 1024, "a record of contactd is far below the cap");
});

Deno.test("the reader never reads at or past `end`, and counts offsets from `start`", async () => {
  const bytes = encoder.encode("bc\nde\nfg\n");
  const file = source(bytes);
  const lines = [];
  for await (const line of readLines(file, { start: 100, end: 104, chunkBytes: 2 })) {
    lines.push({ text: line.text, start: line.start, end: line.end, whole: line.whole });
  }
  assert.deepEqual(lines, [
    { text: "bc", start: 100, end: 102, whole: true },
    { text: "d", start: 103, end: 104, whole: false },
  ]);
  assert.equal(file.reads, 2);
});

Deno.test("a long read asks for a full garbage collection every COLLECT_EVERY_BYTES, and the runtime gives one", async () => {
  // Lines of 64 KiB: few lines, many bytes.
  const line = new Uint8Array(64 * 1024).fill(120);
  line[line.byteLength - 1] = 10;
  const total = 2 * COLLECT_EVERY_BYTES + line.byteLength;
  let at = 0;
  const big = {
    read(into: Uint8Array): Promise<number | null> {
      if (at >= total) return Promise.resolve(null);
      const n = Math.min(into.byteLength, line.byteLength, total - at);
      into.set(line.subarray(0, n));
      at += n;
      return Promise.resolve(n);
    },
  };
  let collected = 0;
  let lines = 0;
  for await (const _ of readLines(big, { collect: () => collected++ })) lines++;
  assert.equal(lines, total / line.byteLength);
  assert.equal(collected, 2);
  // The real one (lib/common/collect_garbage.ts): V8's gc, which Deno exposes without permission.
  collectGarbage();
});
