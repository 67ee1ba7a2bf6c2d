/**
 * `contactd export`'s rules: which records of the backup file go out (`--since`, `--form`), and
 * how (`jsonl`: the lines as they are in the file; `csv`: RFC 4180 with a header row, every value
 * neutralised against spreadsheet formulas by lib/common/csv.ts).
 *
 * @module
 */
import { isRecord } from "../common/json.ts";
import { RESERVED_FORM_ID } from "../config/config.ts";
import { CSV_LINE_BREAK, csvRow } from "../common/csv.ts";
import { parseRecordLine, recordTime, splitLines, type StoredRecord } from "./records.ts";

/** The form id `--form` takes for records without a `form` key (the default form's). */
export const DEFAULT_FORM = RESERVED_FORM_ID;

/** The output formats, the first the default. */
export const EXPORT_FORMATS = ["jsonl", "csv"] as const;

/** One of {@linkcode EXPORT_FORMATS}. */
export type ExportFormat = typeof EXPORT_FORMATS[number];

/** Which records go out. */
export interface ExportFilter {
  /** Only records at or after this time (ms since the epoch). */
  readonly since?: number;
  /** Only records of this form ({@linkcode DEFAULT_FORM}: those without a `form` key). */
  readonly form?: string;
}

/** The CSV columns every export has, in this order; extra fields follow as `fields.<name>`. */
export const CSV_COLUMNS = [
  "ts",
  "id",
  "form",
  "name",
  "contact",
  "message",
  "ip",
  "messenger_ok",
  "messenger_error",
] as const;

/**
 * `--since`: a date (`2026-11-01`, midnight UTC) or a time with its zone
 * (`2026-11-01T09:30:00Z`, `2026-11-01T10:30:00+01:00`); `undefined` for anything else.
 */
export function parseSince(text: string): number | undefined {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/.test(
    text,
  );
  if (!date && !time) return undefined;
  // Each part must be one the calendar has: no 2026-02-30, no T24:00, no +25:00.
  const local = text.replace(/(?:Z|[+-]\d{2}:\d{2})$/, "").replace(/\.\d+$/, "");
  const [y, mo, d, h = 0, mi = 0, sec = 0] = (local.match(/\d+/g) ?? []).map(Number);
  const zone = /([+-])(\d{2}):(\d{2})$/.exec(text);
  if (zone !== null && (Number(zone[2]) > 23 || Number(zone[3]) > 59)) return undefined;
  const parts = new Date(Date.UTC(y!, mo! - 1, d!, h, mi, sec));
  if (
    y! < 1 || parts.getUTCFullYear() !== y || parts.getUTCMonth() !== mo! - 1 ||
    parts.getUTCDate() !== d || parts.getUTCHours() !== h || parts.getUTCMinutes() !== mi ||
    parts.getUTCSeconds() !== sec
  ) {
    return undefined;
  }
  const ms = Date.parse(date ? `${text}T00:00:00Z` : text);
  return Number.isNaN(ms) ? undefined : ms;
}

/** What {@linkcode selectRecords} found. */
export interface Selection {
  readonly records: readonly StoredRecord[];
  /** Whole lines that are not records (kept in the file, never exported). */
  readonly damaged: number;
}

/**
 * The records of the backup file's text that pass `filter`, in file order. A last line without
 * its line break (an append in progress) is not read; a record whose `ts` is not a time passes
 * only when there is no `since`.
 */
export function selectRecords(text: string, filter: ExportFilter): Selection {
  const records: StoredRecord[] = [];
  let damaged = 0;
  for (const line of splitLines(text).lines) {
    const record = parseRecordLine(line);
    if (record === undefined) {
      damaged++;
      continue;
    }
    if (filter.since !== undefined && !(recordTime(record) >= filter.since)) continue;
    if (filter.form !== undefined && (record.form ?? DEFAULT_FORM) !== filter.form) continue;
    records.push(record);
  }
  return { records, damaged };
}

/** The export's text in `format`: whole lines, each ending with its line break. */
export function exportText(records: readonly StoredRecord[], format: ExportFormat): string {
  if (format === "jsonl") return records.map((record) => `${record.line}\n`).join("");
  const extra = _extraColumns(records);
  const rows = [[...CSV_COLUMNS, ...extra.map(_columnName)]];
  for (const record of records) {
    rows.push([
      ...CSV_COLUMNS.map((column) =>
        column === "form" ? record.form ?? DEFAULT_FORM : _cell(record.value[column])
      ),
      ...extra.map((column) => _cell(_valueOf(record, column))),
    ]);
  }
  return rows.map((row) => csvRow(row) + CSV_LINE_BREAK).join("");
}

/** A column beyond {@linkcode CSV_COLUMNS}: a key of `fields`, or another top-level key. */
type _Extra = { readonly field: string } | { readonly key: string };

/** The extra columns, in the order they first appear: `fields` keys, then other keys. */
function _extraColumns(records: readonly StoredRecord[]): _Extra[] {
  const fields = new Set<string>();
  const keys = new Set<string>();
  const known = new Set<string>([...CSV_COLUMNS, "fields"]);
  for (const { value } of records) {
    const inner = value.fields;
    if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) {
      for (const name of Object.keys(inner)) fields.add(name);
    }
    for (const key of Object.keys(value)) if (!known.has(key)) keys.add(key);
  }
  return [...[...fields].map((field) => ({ field })), ...[...keys].map((key) => ({ key }))];
}

function _columnName(column: _Extra): string {
  return "field" in column ? `fields.${column.field}` : column.key;
}

function _valueOf(record: StoredRecord, column: _Extra): unknown {
  // Own keys only: a sender's field named `constructor` or `toString` must not make every other
  // record's cell one of Object's methods.
  if ("key" in column) return _own(record.value, column.key);
  const inner = record.value.fields;
  return isRecord(inner) ? _own(inner, column.field) : undefined;
}

function _own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** A value as a cell: strings as they are, nothing as empty, anything else as JSON. */
function _cell(value: unknown): string {
  if (value === undefined || value === null || typeof value === "function") return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}
