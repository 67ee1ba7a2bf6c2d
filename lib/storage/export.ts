/**
 * `contactd export`'s rules: which records of the backup file go out (`--since`, `--form`), and
 * how (`jsonl`: the lines as they are in the file; `csv`: RFC 4180 with a header row, every value
 * neutralised against spreadsheet formulas by lib/common/csv.ts), streamed as the file is read
 * (lib/common/line_reader.ts).
 *
 * @module
 */
import { isRecord } from "../common/json.ts";
import { RESERVED_FORM_ID } from "../config/config.ts";
import { CSV_LINE_BREAK, csvRow } from "../common/csv.ts";
import { type ByteSource, type LineOptions, readLines } from "../common/line_reader.ts";
import { parseRecordLine, recordTime, type StoredRecord } from "./records.ts";

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

/** Whether `record` passes `filter` (a `ts` that is not a time passes only without `since`). */
function _selects(record: StoredRecord, filter: ExportFilter): boolean {
  if (filter.since !== undefined && !(recordTime(record) >= filter.since)) return false;
  return filter.form === undefined || (record.form ?? DEFAULT_FORM) === filter.form;
}

/** What {@linkcode exportRecords} wrote. */
export interface ExportCounts {
  /** Records written. */
  readonly records: number;
  /** Whole lines that are not records, or longer than the cap (kept in the file, never exported). */
  readonly damaged: number;
}

/** The open backup file an export reads: from its start, and again for CSV's second pass. */
export type ExportSource = ByteSource & {
  seek(offset: number, whence: Deno.SeekMode): Promise<number>;
};

/** The most text handed to `write` at once. */
const WRITE_BATCH = 1 << 16;

/**
 * Streams the records of the open backup file `file` that pass `filter`, in file order, to
 * `write` in `format`: whole lines, each with its line break, in batches of about 64 KiB, so
 * memory does not grow with the file. A last line without its line break (an append in progress)
 * is not read. CSV reads the file twice: first for the columns its header names (the extra
 * fields of the records chosen), then for the rows, up to where the first pass ended, so a
 * record appended meanwhile is left for the next export, as in JSON lines.
 */
export async function exportRecords(
  file: ExportSource,
  filter: ExportFilter,
  format: ExportFormat,
  write: (text: string) => void,
  options: LineOptions = {},
): Promise<ExportCounts> {
  let batch = "";
  const emit = (text: string) => {
    batch += text;
    if (batch.length >= WRITE_BATCH) (write(batch), batch = "");
  };
  let counts: ExportCounts;
  if (format === "jsonl") {
    counts = await _eachRecord(file, filter, options, (record) => emit(`${record.line}\n`));
  } else {
    const columns = new _Columns();
    const first = await _eachRecord(file, filter, options, (record) => columns.add(record));
    const extra = columns.extra();
    emit(csvRow([...CSV_COLUMNS, ...extra.map(_columnName)]) + CSV_LINE_BREAK);
    await file.seek(0, Deno.SeekMode.Start);
    await _eachRecord(file, filter, { ...options, end: first.end }, (record) => {
      const row = [
        ...CSV_COLUMNS.map((column) =>
          column === "form" ? record.form ?? DEFAULT_FORM : _cell(record.value[column])
        ),
        ...extra.map((column) => _cell(_valueOf(record, column))),
      ];
      emit(csvRow(row) + CSV_LINE_BREAK);
    });
    counts = first;
  }
  if (batch !== "") write(batch);
  return { records: counts.records, damaged: counts.damaged };
}

/**
 * Hands each record of `file` that passes `filter` to `each`; counts them and the damaged lines,
 * and says where the last whole line ended.
 */
async function _eachRecord(
  file: ByteSource,
  filter: ExportFilter,
  options: LineOptions,
  each: (record: StoredRecord) => void,
): Promise<ExportCounts & { readonly end: number }> {
  let records = 0;
  let damaged = 0;
  let end = 0;
  for await (const line of readLines(file, options)) {
    if (!line.whole) break;
    end = line.end + 1;
    const record = line.text === undefined ? undefined : parseRecordLine(line.text);
    if (record === undefined) {
      damaged++;
      continue;
    }
    if (!_selects(record, filter)) continue;
    records++;
    each(record);
  }
  return { records, damaged, end };
}

/** A column beyond {@linkcode CSV_COLUMNS}: a key of `fields`, or another top-level key. */
type _Extra = { readonly field: string } | { readonly key: string };

/** The extra columns, in the order they first appear: `fields` keys, then other keys. */
class _Columns {
  readonly #fields = new Set<string>();
  readonly #keys = new Set<string>();
  static readonly #known = new Set<string>([...CSV_COLUMNS, "fields"]);

  /** Notes the columns of one record. */
  add({ value }: StoredRecord): void {
    const inner = value.fields;
    if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) {
      for (const name of Object.keys(inner)) this.#fields.add(name);
    }
    for (const key of Object.keys(value)) if (!_Columns.#known.has(key)) this.#keys.add(key);
  }

  /** The columns noted. */
  extra(): _Extra[] {
    return [
      ...[...this.#fields].map((field) => ({ field })),
      ...[...this.#keys].map((key) => ({ key })),
    ];
  }
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
