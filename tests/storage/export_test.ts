import assert from "node:assert/strict";
import {
  CSV_COLUMNS,
  DEFAULT_FORM,
  exportText,
  parseSince,
  selectRecords,
} from "../../lib/storage/export.ts";
import { parseRecordLine, splitLines } from "../../lib/storage/records.ts";
import { formatRecord } from "../../lib/storage/backup.ts";
import { parseCsv } from "../support/csv.ts";

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

Deno.test("selectRecords keeps file order, cuts by --since and --form (no form key is the default form), and counts damaged lines", () => {
  const text = OLD + "not json\n" + NEW + SALES + '{"ts":"2026-11-22T0';
  const all = selectRecords(text, {});
  assert.deepEqual(all.records.map((r) => r.line + "\n"), [OLD, NEW, SALES]);
  assert.equal(all.damaged, 1);
  const since = selectRecords(text, { since: Date.UTC(2026, 10, 20, 10) });
  assert.deepEqual(since.records.map((r) => r.id), ["aaaa1111", "bbbb2222"]);
  // The cut is inclusive: a record at the instant is in.
  assert.deepEqual(
    selectRecords(text, { since: Date.UTC(2026, 10, 20, 10, 0, 1) }).records.map((r) => r.id),
    ["bbbb2222"],
  );
  assert.deepEqual(
    selectRecords(text, { form: DEFAULT_FORM }).records.map((r) => r.line + "\n"),
    [OLD, NEW],
  );
  assert.deepEqual(selectRecords(text, { form: "sales" }).records.map((r) => r.id), ["bbbb2222"]);
  assert.deepEqual(selectRecords(text, { form: "support" }).records, []);
  // A record whose ts is not a time is never "since" anything.
  const odd = '{"ts":"soon","name":"x"}\n';
  assert.equal(selectRecords(odd, {}).records.length, 1);
  assert.equal(selectRecords(odd, { since: 0 }).records.length, 0);
});

Deno.test("exportText jsonl writes the selected lines exactly as they are in the file", () => {
  const text = OLD + NEW + SALES;
  assert.equal(exportText(selectRecords(text, {}).records, "jsonl"), text);
  assert.equal(exportText([], "jsonl"), "");
});

Deno.test("exportText csv: a header, one CRLF row per record, extra fields as columns, every value back as it was or neutralised", () => {
  const records = selectRecords(OLD + NEW + SALES, {}).records;
  const csv = exportText(records, "csv");
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
  assert.equal(exportText([], "csv"), CSV_COLUMNS.join(",") + "\r\n");
});

Deno.test("exportText csv: a sender's field named like an Object method (constructor, toString) is a column like any other, never a crash", () => {
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
  const rows = parseCsv(exportText(selectRecords(text, {}).records, "csv"));
  const header = rows[0]!;
  const cell = (row: number, column: string) => rows[row]![header.indexOf(column)];
  assert.equal(cell(1, "fields.constructor"), "x");
  assert.equal(cell(1, "fields.toString"), "y");
  assert.equal(cell(2, "fields.constructor"), "");
  assert.equal(cell(2, "fields.toString"), "");
  assert.equal(cell(2, "fields.phone"), "1");
});
