/**
 * The outbox file's format: its lines, how they fold into each submission's state, and reading
 * them back (streamed, and without decoding a sender's text unless it is asked for).
 *
 * Lines, each with `op` and `id`:
 * - `add`: the submission (`ts`, `name`, `contact`, `message`, `ip`); after a compaction it also
 *   carries the state below (`status`, `attempts`, `first_error`, `last_error`, `last_ts`, `done`),
 *   written before `name`, so the head of every `add` line (up to `,"name":`) is contactd's own;
 * - `recorded`: its backup record was written; `status` is what the sender was answered, `null`
 *   when no answer could be given (contactd stopped first);
 * - `failed`: a delivery attempt failed at `ts` with `error`;
 * - `done`: it reached the chat (`result` `delivered`) or was given up (`given_up`).
 *
 * Every line about a submission comes after its `add` line, so its whole state can be rebuilt by
 * reading from its `add` line on.
 *
 * @module
 */
import { isRecord } from "../common/json.ts";

/** A validated submission as the outbox keeps it. */
export interface OutboxSubmission {
  /** Short stable id, shown in the notification and the log. */
  readonly id: string;
  /** When it arrived, as the backup record writes it (`2026-11-22T14:03:09Z`). */
  readonly ts: string;
  readonly name: string;
  readonly contact: string;
  readonly message: string;
  readonly ip: string;
}

/** What is known of one submission in the outbox. */
export interface OutboxEntry {
  readonly id: string;
  readonly ts: string;
  /** Failed delivery attempts so far. */
  attempts: number;
  firstError: string | null;
  lastError: string | null;
  /** When the last attempt failed. */
  lastTs: string | null;
  /**
   * `undefined` while its backup record is not written (the sender not yet answered); then the
   * status the sender was answered, `null` if no answer could be given.
   */
  status: number | null | undefined;
  /** Reached the chat or given up (kept only until its backup record is written), else false. */
  done: false | "delivered" | "given_up";
  /** Where its `add` line is in the file, and its length in bytes (newline included). */
  offset: number;
  length: number;
}

/** What {@linkcode loadOutbox} found. */
export interface OutboxIndex {
  /** Every entry that is pending or lacks its backup record, oldest first. */
  readonly entries: Map<string, OutboxEntry>;
  /** Bytes of the whole lines read. */
  readonly bytes: number;
  /** Lines that were not whole JSON (a torn line, a crash mid-write): skipped. */
  readonly skipped: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The outbox's path for a backup file path. */
export function outboxPath(messagesFile: string): string {
  return `${messagesFile}.outbox`;
}

/** Serialises a new submission as its `add` line. */
export function addLine(submission: OutboxSubmission): string {
  const { id, ts, name, contact, message, ip } = submission;
  return JSON.stringify({ op: "add", id, ts, name, contact, message, ip }) + "\n";
}

/** An `add` line with the entry's state folded in, before the sender's fields (compaction). */
export function compactedLine(submission: OutboxSubmission, entry: OutboxEntry): string {
  const { id, ts, name, contact, message, ip } = submission;
  return JSON.stringify({
    op: "add",
    id,
    ts,
    ...(entry.status === undefined ? {} : { status: entry.status }),
    ...(entry.attempts === 0 ? {} : {
      attempts: entry.attempts,
      first_error: entry.firstError,
      last_error: entry.lastError,
      last_ts: entry.lastTs,
    }),
    ...(entry.done === false ? {} : { done: entry.done }),
    name,
    contact,
    message,
    ip,
  }) + "\n";
}

/** Reads an `add` line back; `undefined` when it is not one. */
export function parseSubmissionLine(line: string): OutboxSubmission | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.op !== "add") return undefined;
  const { id, ts, name, contact, message, ip } = value;
  const texts = [id, ts, name, contact, message, ip];
  if (!texts.every((text) => typeof text === "string")) return undefined;
  return { id, ts, name, contact, message, ip } as OutboxSubmission;
}

const ADD_START = encoder.encode('{"op":"add",');
const HEAD_END = encoder.encode(',"name":');

/**
 * A line's JSON as far as its state goes: all of it, except that an `add` line is cut before the
 * sender's fields (so a long message is never decoded just to learn an id). `undefined` when the
 * line is not JSON.
 */
export function parseHead(bytes: Uint8Array): Record<string, unknown> | undefined {
  let text: string;
  if (startsWith(bytes, ADD_START)) {
    const end = indexOf(bytes, HEAD_END);
    // The cut is safe: inside a JSON string a quote is escaped, so `,"name":` is a key.
    text = end < 0 ? decoder.decode(bytes) : decoder.decode(bytes.subarray(0, end)) + "}";
  } else {
    text = decoder.decode(bytes);
  }
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) && typeof value.id === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The entry of a submission just added at `offset` (`length` bytes): pending, nothing tried. */
export function newEntry(
  submission: Pick<OutboxSubmission, "id" | "ts">,
  offset: number,
  length: number,
): OutboxEntry {
  return {
    id: submission.id,
    ts: submission.ts,
    attempts: 0,
    firstError: null,
    lastError: null,
    lastTs: null,
    status: undefined,
    done: false,
    offset,
    length,
  };
}

/** A new entry from an `add` line's head; `undefined` when the head is not one. */
export function entryOf(
  head: Record<string, unknown>,
  offset: number,
  length: number,
): OutboxEntry | undefined {
  if (head.op !== "add" || typeof head.ts !== "string") return undefined;
  return {
    id: head.id as string,
    ts: head.ts,
    attempts: typeof head.attempts === "number" ? head.attempts : 0,
    firstError: typeof head.first_error === "string" ? head.first_error : null,
    lastError: typeof head.last_error === "string" ? head.last_error : null,
    lastTs: typeof head.last_ts === "string" ? head.last_ts : null,
    status: typeof head.status === "number" || head.status === null ? head.status : undefined,
    done: head.done === "delivered" || head.done === "given_up" ? head.done : false,
    offset,
    length,
  };
}

/**
 * Folds a line other than `add` into `entry`. Returns false for an unknown op. The entry is
 * finished (nothing left to do for it) once it is done and recorded: see {@linkcode finished}.
 */
export function applyOp(entry: OutboxEntry, head: Record<string, unknown>): boolean {
  switch (head.op) {
    case "recorded":
      entry.status = typeof head.status === "number" ? head.status : null;
      return true;
    case "failed":
      entry.attempts++;
      entry.lastError = typeof head.error === "string" ? head.error : "unknown";
      entry.firstError ??= entry.lastError;
      entry.lastTs = typeof head.ts === "string" ? head.ts : null;
      return true;
    case "done":
      entry.done = head.result === "given_up" ? "given_up" : "delivered";
      return true;
    default:
      return false;
  }
}

/** Delivered (or given up) and recorded: nothing left to do for it. */
export function finished(entry: OutboxEntry): boolean {
  return entry.done !== false && entry.status !== undefined;
}

/**
 * Calls `onLine` with each whole line of `file` from byte `from` on (its bytes without the
 * newline, its offset, its length with the newline), streaming; a promise it returns is awaited
 * before the next line. Returns where the whole lines end: a last line without its newline (a
 * crash mid-write) is not passed on.
 */
export async function scanLines(
  file: Deno.FsFile,
  from: number,
  onLine: (bytes: Uint8Array, offset: number, length: number) => void | Promise<void>,
): Promise<number> {
  await file.seek(from, Deno.SeekMode.Start);
  let offset = from;
  let pending = new Uint8Array(0);
  const chunk = new Uint8Array(1 << 20);
  while (true) {
    const n = await file.read(chunk);
    if (n === null) break;
    const bytes = concat(pending, chunk.subarray(0, n));
    let start = 0;
    for (let end = bytes.indexOf(0x0a); end >= 0; end = bytes.indexOf(0x0a, start)) {
      const length = end + 1 - start;
      const wait = onLine(bytes.subarray(start, end), offset, length);
      if (wait !== undefined) await wait;
      offset += length;
      start = end + 1;
    }
    pending = bytes.slice(start);
  }
  return offset;
}

/**
 * Reads a whole outbox file into its index, streaming; a missing file is an empty outbox. For
 * `contactd pending` and tests: the service keeps only a window (lib/storage/outbox.ts).
 */
export async function loadOutbox(path: string): Promise<OutboxIndex> {
  const entries = new Map<string, OutboxEntry>();
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { entries, bytes: 0, skipped: 0 };
    throw error;
  }
  let skipped = 0;
  try {
    const bytes = await scanLines(file, 0, (line, offset, length) => {
      const head = parseHead(line);
      const entry = head === undefined ? undefined : entries.get(head.id as string);
      if (head !== undefined && head.op === "add") {
        const added = entryOf(head, offset, length);
        if (added === undefined) skipped++;
        else entries.set(added.id, added);
      } else if (head === undefined || entry === undefined || !applyOp(entry, head)) {
        skipped++;
      } else if (finished(entry)) {
        entries.delete(entry.id);
      }
    });
    return { entries, bytes, skipped };
  } finally {
    file.close();
  }
}

/**
 * The submission of each of `entries`, read from the outbox at `path` (read only), in order: one
 * result per entry, `undefined` where its line is no longer there (the service compacted the file
 * since `entries` were read), so a text is never shown under another submission's id.
 */
export async function* readSubmissions(
  path: string,
  entries: Iterable<OutboxEntry>,
): AsyncGenerator<OutboxSubmission | undefined> {
  const file = await Deno.open(path, { read: true });
  try {
    for (const entry of entries) {
      const line = await readAt(file, entry.offset, entry.length).catch(() => "");
      const submission = parseSubmissionLine(line);
      yield submission?.id === entry.id ? submission : undefined;
    }
  } finally {
    file.close();
  }
}

/** The `length` bytes at `offset` of `file`, as text. */
export async function readAt(file: Deno.FsFile, offset: number, length: number): Promise<string> {
  await file.seek(offset, Deno.SeekMode.Start);
  const bytes = new Uint8Array(length);
  let got = 0;
  while (got < bytes.byteLength) {
    const n = await file.read(bytes.subarray(got));
    if (n === null) throw new Error("outbox entry past the end of the file");
    got += n;
  }
  return decoder.decode(bytes);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b;
  const joined = new Uint8Array(a.byteLength + b.byteLength);
  joined.set(a);
  joined.set(b, a.byteLength);
  return joined;
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.byteLength < prefix.byteLength) return false;
  for (let i = 0; i < prefix.byteLength; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

function indexOf(bytes: Uint8Array, needle: Uint8Array): number {
  const first = needle[0]!;
  for (let at = bytes.indexOf(first); at >= 0; at = bytes.indexOf(first, at + 1)) {
    let i = 1;
    while (i < needle.byteLength && bytes[at + i] === needle[i]) i++;
    if (i === needle.byteLength) return at;
  }
  return -1;
}
