import assert from "node:assert/strict";
import {
  CSV_COLUMNS,
  DEFAULT_FORM,
  type ExportFilter,
  type ExportFormat,
  exportRecords,
  parseSince,
} from "../../lib/storage/export.ts";
import { parseRecordLine, splitLines } from "../../lib/storage/records.ts";
import { formatRecord } from "../../lib/storage/backup.ts";
import { parseCsv } from "../support/csv.ts";
import { MemoryFs } from "../support/memory_fs.ts";
import { MAX_LINE_BYTES, READ_CHUNK_BYTES } from "../../lib/common/line_reader.ts";

/**
 * The export of a backup file holding `text`, streamed in reads of `chunkBytes` (small: lines
 * cross reads), and how many writes it took.
 */
async function exportOf(
  text: string,
  filter: ExportFilter,
  format: ExportFormat = "jsonl",
  chunkBytes = 7,
) {
  const memory = new MemoryFs();
  memory.writeText("/messages.jsonl", text);
  const writes: string[] = [];
  const counts = await exportRecords(
    await memory.open("/messages.jsonl", { read: true }),
    filter,
    format,
    (chunk) => writes.push(chunk),
    { chunkBytes },
  );
  return { ...counts, text: writes.join(""), writes: writes.length };
}

/** The ids of a JSON lines export. */
const idsOf = (jsonl: string) =>
  jsonl.trimEnd().split("\n").filter((l) => l).map((l) => JSON.parse(l).id);

const base = {
  name: "Ann",
  contact: "@ann",
  message: "Hello",
  ip: "203.0.113.7",
  messenger_ok: true,
  messenger_error: null,
};
const NEW = formatRecord({ ...base, ts: "2026-11-20T10:00:00Z", id: "aaaa1111" });
/** Written before ids were kept. */
const OLD = JSON.stringify({ ts: "2026-10-01T08:00:00Z", ...base, name: "Old" }) + "\n";
/** Of a form other than the default (issue 21 adds `form` and `fields`). */
const SALES = JSON.stringify({
  ts: "2026-11-21T09:00:00Z",
  id: "bbbb2222",
  form: "sales",
  ...base,
  message: 'Quote, please: "2 units"\nThanks',
  fields: { subject: "=cmd|' /C calc'!A0", phone: "+1 555" },
}) + "\n";

Deno.test("splitLines leaves out a last line without its line break (an append in progress)", () => {
  assert.deepEqual(splitLines(""), { lines: [], partial: "" });
  assert.deepEqual(splitLines("a\nb\n"), { lines: ["a", "b"], partial: "" });
  assert.deepEqual(splitLines('a\n{"ts":'), { lines: ["a"], partial: '{"ts":' });
});

Deno.test("parseRecordLine takes records without id or form as valid, and refuses what is not a record", () => {
  const old = parseRecordLine(OLD.trimEnd())!;
  assert.equal(old.ts, "2026-10-01T08:00:00Z");
  assert.equal(old.id, undefined);
  assert.equal(old.form, undefined);
  assert.equal(parseRecordLine(NEW.trimEnd())!.id, "aaaa1111");
  assert.equal(parseRecordLine(SALES.trimEnd())!.form, "sales");
  for (const bad of ["", "{", "[]", "null", '{"name":"no ts"}', '{"ts":5}']) {
    assert.equal(parseRecordLine(bad), undefined, bad);
  }
});

Deno.test("parseSince takes a date (midnight UTC) or a time with its zone, and nothing else", () => {
  assert.equal(parseSince("2026-11-01"), Date.UTC(2026, 10, 1));
  assert.equal(parseSince("2026-11-01T09:30:00Z"), Date.UTC(2026, 10, 1, 9, 30));
  assert.equal(parseSince("2026-11-01T10:30:00+01:00"), Date.UTC(2026, 10, 1, 9, 30));
  assert.equal(parseSince("2026-11-01T10:30+01:00"), Date.UTC(2026, 10, 1, 9, 30));
  assert.equal(parseSince("2024-02-29"), Date.UTC(2024, 1, 29));
  // Impossible dates and times are refused, not rolled over into the next day or month.
  for (
    const impossible of [
      "2026-02-30",
      "2026-02-29",
      "2026-13-01",
      "2026-04-31",
      "2026-11-01T24:00Z",
      "2026-11-01T23:60Z",
      "2026-11-01T23:59:60Z",
      "2026-11-01T10:00+25:00",
      "0000-01-01",
    ]
  ) {
    assert.equal(parseSince(impossible), undefined, impossible);
  }
  for (
    const bad of ["", "yesterday", "2026-11-01T09:30:00", "2026-13-01", "1700000000", "2026-11-1"]
  ) {
    assert.equal(parseSince(bad), undefined, bad);
  }
});

Deno.test("an export keeps file order, cuts by --since and --form (no form key is the default form), and counts damaged lines", async () => {
  const text = OLD + "not json\n" + NEW + SALES + '{"ts":"2026-11-22T0';
  const all = await exportOf(text, {});
  assert.equal(all.text, OLD + NEW + SALES);
  assert.equal(all.records, 3);
  assert.equal(all.damaged, 1);
  const since = await exportOf(text, { since: Date.UTC(2026, 10, 20, 10) });
  assert.deepEqual(idsOf(since.text), ["aaaa1111", "bbbb2222"]);
  // The cut is inclusive: a record at the instant is in.
  assert.deepEqual(
    idsOf((await exportOf(text, { since: Date.UTC(2026, 10, 20, 10, 0, 1) })).text),
    ["bbbb2222"],
  );
  assert.equal((await exportOf(text, { form: DEFAULT_FORM })).text, OLD + NEW);
  assert.deepEqual(idsOf((await exportOf(text, { form: "sales" })).text), ["bbbb2222"]);
  assert.equal((await exportOf(text, { form: "support" })).records, 0);
  // A record whose ts is not a time is never "since" anything.
  const odd = '{"ts":"soon","name":"x"}\n';
  assert.equal((await exportOf(odd, {})).records, 1);
  assert.equal((await exportOf(odd, { since: 0 })).records, 0);
});

Deno.test("a JSON lines export writes the selected lines exactly as they are in the file", async () => {
  const text = OLD + NEW + SALES;
  assert.equal((await exportOf(text, {})).text, text);
  assert.equal((await exportOf("", {})).text, "");
});

Deno.test("a CSV export: a header, one CRLF row per record, extra fields as columns, every value back as it was or neutralised", async () => {
  const csv = (await exportOf(OLD + NEW + SALES, {}, "csv")).text;
  assert.ok(csv.endsWith("\r\n"));
  const rows = parseCsv(csv);
  assert.deepEqual(rows[0], [...CSV_COLUMNS, "fields.subject", "fields.phone"]);
  assert.equal(rows.length, 4);
  const byColumn = rows.slice(1).map((row) =>
    Object.fromEntries(row.map((value, i) => [rows[0]![i]!, value]))
  );
  assert.deepEqual(byColumn[0], {
    ts: "2026-10-01T08:00:00Z",
    id: "",
    form: DEFAULT_FORM,
    name: "Old",
    contact: "'@ann", // "@" starts a formula in some spreadsheets
    message: "Hello",
    ip: "203.0.113.7",
    messenger_ok: "true",
    messenger_error: "",
    "fields.subject": "",
    "fields.phone": "",
  });
  assert.equal(byColumn[1]!.id, "aaaa1111");
  assert.equal(byColumn[2]!.form, "sales");
  assert.equal(byColumn[2]!.message, 'Quote, please: "2 units"\nThanks');
  assert.equal(byColumn[2]!["fields.subject"], "'=cmd|' /C calc'!A0");
  assert.equal(byColumn[2]!["fields.phone"], "'+1 555");
  // Nothing but the header when nothing is selected.
  assert.equal((await exportOf("", {}, "csv")).text, CSV_COLUMNS.join(",") + "\r\n");
});

Deno.test("a CSV export: a sender's field named like an Object method (constructor, toString) is a column like any other, never a crash", async () => {
  const line = (fields: Record<string, string>) =>
    JSON.stringify({
      ts: "2026-11-01T08:00:00Z",
      name: "",
      contact: "",
      message: "m",
      ip: "203.0.113.9",
      messenger_ok: true,
      messenger_error: null,
      fields,
    }) + "\n";
  const text = line({ constructor: "x", toString: "y" }) + line({ phone: "1" });
  const rows = parseCsv((await exportOf(text, {}, "csv")).text);
  const header = rows[0]!;
  const cell = (row: number, column: string) => rows[row]![header.indexOf(column)];
  assert.equal(cell(1, "fields.constructor"), "x");
  assert.equal(cell(1, "fields.toString"), "y");
  assert.equal(cell(2, "fields.constructor"), "");
  assert.equal(cell(2, "fields.toString"), "");
  assert.equal(cell(2, "fields.phone"), "1");
});

Deno.test("an export of a file of many reads streams it: the same lines, handed on in batches, never the whole file at once", async () => {
  const text = Array.from({ length: 2000 }, (_, i) => NEW.replace("aaaa1111", `id${i}`)).join("");
  assert.ok(text.length > 4 * READ_CHUNK_BYTES);
  const jsonl = await exportOf(text, {}, "jsonl", READ_CHUNK_BYTES);
  assert.equal(jsonl.text, text);
  assert.equal(jsonl.records, 2000);
  assert.ok(jsonl.writes > 1, "written as it is read");
  assert.ok(jsonl.writes < 100, "in batches, not a write a line");
  const csv = await exportOf(text, {}, "csv", READ_CHUNK_BYTES);
  assert.equal(csv.records, 2000);
  assert.equal(parseCsv(csv.text).length, 2001);
  assert.ok(csv.writes > 1);
});

Deno.test("an export skips and counts a line over the cap as damaged, and reads the records after it", async () => {
  const huge = `{"ts":"2026-11-20T10:00:00Z","message":"${"x".repeat(MAX_LINE_BYTES)}"}\n`;
  const out = await exportOf(OLD + huge + NEW, {}, "jsonl", READ_CHUNK_BYTES);
  assert.equal(out.text, OLD + NEW);
  assert.deepEqual([out.records, out.damaged], [2, 1]);
});

Deno.test("a CSV export's rows stop where its first pass stopped: a record appended meanwhile is left for the next export, its columns never missing from the header", async () => {
  const memory = new MemoryFs();
  memory.writeText("/messages.jsonl", OLD + NEW);
  const file = await memory.open("/messages.jsonl", { read: true });
  const source = {
    read: (into: Uint8Array) => file.read(into),
    seek: (offset: number, whence: Deno.SeekMode) => {
      // Between the passes: the service appends a record with a field no header names.
      memory.writeText("/messages.jsonl", OLD + NEW + SALES);
      return file.seek(offset, whence);
    },
  };
  const writes: string[] = [];
  const counts = await exportRecords(source, {}, "csv", (text) => writes.push(text));
  const rows = parseCsv(writes.join(""));
  assert.deepEqual(rows[0], [...CSV_COLUMNS]);
  assert.deepEqual(rows.slice(1).map((row) => row[1]), ["", "aaaa1111"]);
  assert.deepEqual(counts, { records: 2, damaged: 0 });
});
