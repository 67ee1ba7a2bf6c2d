/**
 * Reading the backup file back: its text as whole lines, each a record or not. Tolerant of what
 * older versions wrote (a record without `id`, without `form`) and of a torn last line a crash
 * or an append in progress leaves.
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
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

/** Splits the file's text into whole lines and what follows the last line break. */
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
 * The record of submission `id` in the backup file at `path`, the last one when a crash left it
 * twice; `undefined` when none is (never written, erased, or past `RETENTION`). Read in chunks:
 * only lines that mention the id are parsed, so a large file is not held whole.
 */
export async function findRecord(
  fs: StorageFs,
  path: string,
  id: string,
): Promise<StoredRecord | undefined> {
  const file = await fs.open(path, { read: true });
  const needle = JSON.stringify(id);
  const decoder = new TextDecoder();
  let found: StoredRecord | undefined;
  let rest = "";
  const consider = (line: string) => {
    if (!line.includes(needle)) return;
    const record = parseRecordLine(line);
    if (record?.id === id) found = record;
  };
  try {
    const chunk = new Uint8Array(1 << 16);
    while (true) {
      const n = await file.read(chunk);
      if (n === null) break;
      const text = rest + decoder.decode(chunk.subarray(0, n), { stream: true });
      const lines = text.split("\n");
      rest = lines.pop()!;
      for (const line of lines) consider(line);
    }
  } finally {
    file.close();
  }
  // A last line without its line break is still being written (or torn): not a record yet.
  return found;
}
