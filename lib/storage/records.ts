/**
 * Reading the backup file back: its whole lines, each a record or not, streamed by the one line
 * reader (lib/common/line_reader.ts), so memory does not grow with the file. Tolerant of what
 * older versions wrote (a record without `id`, without `form`), of a torn last line a crash or an
 * append in progress leaves, and of a line over the reader's cap (damaged, never held).
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
import { type FileLine, type LineOptions, readLines } from "../common/line_reader.ts";
import type { StorageFs } from "./file_system.ts";

/** A record as read back: the keys contactd relies on checked, every other key kept. */
export interface StoredRecord {
  /** The record's line, as it is in the file (without its line break). */
  readonly line: string;
  /** Every key of the line. */
  readonly value: Readonly<Record<string, unknown>>;
  readonly ts: string;
  /** Absent in records written before ids were kept. */
  readonly id?: string;
  /** The form's id; absent for the default form (and in records older than forms). */
  readonly form?: string;
}

/** The whole lines of a backup file: a last line without its line break is left out. */
export interface BackupLines {
  readonly lines: readonly string[];
  /** A last line still being written (or torn by a crash): not a record yet. */
  readonly partial: string;
}

/**
 * Splits a small file's text (the chat ledger, the block list) into whole lines and what follows
 * the last line break. The backup file is never read whole: {@linkcode backupLines} streams it.
 */
export function splitLines(text: string): BackupLines {
  const end = text.lastIndexOf("\n");
  const whole = text.slice(0, end + 1);
  return {
    lines: whole === "" ? [] : whole.slice(0, -1).split("\n"),
    partial: text.slice(end + 1),
  };
}

/**
 * The record on one line, or `undefined` when it is not one (damaged: not a JSON object, or no
 * `ts` string). `id` and `form` are kept only when they are strings.
 */
export function parseRecordLine(line: string): StoredRecord | undefined {
  const value = parseJsonText(line);
  if (!isRecord(value) || typeof value.ts !== "string") return undefined;
  return {
    line,
    value,
    ts: value.ts,
    ...(typeof value.id === "string" ? { id: value.id } : {}),
    ...(typeof value.form === "string" ? { form: value.form } : {}),
  };
}

/** The time of a record's `ts` in ms since the epoch, `NaN` when it is not a time. */
export function recordTime(record: Pick<StoredRecord, "ts">): number {
  return Date.parse(record.ts);
}

/**
 * The lines of the backup file at `path`, streamed (lib/common/line_reader.ts `readLines`): the
 * file is opened when the first line is asked for (a missing file rejects then) and closed when
 * the loop ends, however it ends.
 */
export async function* backupLines(
  fs: StorageFs,
  path: string,
  options: LineOptions = {},
): AsyncGenerator<FileLine> {
  const file = await fs.open(path, { read: true });
  try {
    if (options.start !== undefined) await file.seek(options.start, Deno.SeekMode.Start);
    yield* readLines(file, options);
  } finally {
    file.close();
  }
}

/**
 * The record of submission `id` in the backup file at `path`, the last one when a crash left it
 * twice; `undefined` when none is (never written, erased, or past `RETENTION`). Streamed: only
 * lines that mention the id are parsed, so a large file is not held whole.
 */
export async function findRecord(
  fs: StorageFs,
  path: string,
  id: string,
): Promise<StoredRecord | undefined> {
  const needle = JSON.stringify(id);
  let found: StoredRecord | undefined;
  for await (const { text, whole } of backupLines(fs, path)) {
    // A last line without its line break is still being written (or torn): not a record yet.
    if (!whole || text === undefined || !text.includes(needle)) continue;
    const record = parseRecordLine(text);
    if (record?.id === id) found = record;
  }
  return found;
}
