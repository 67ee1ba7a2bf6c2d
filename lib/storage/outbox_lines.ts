/**
 * The outbox file's format: its lines, how they fold into each submission's state, and reading
 * them back (streamed, and without decoding a sender's text unless it is asked for).
 *
 * Lines, each with `op` and `id`:
 * - `add`: the submission (`ts`, `name`, `contact`, `message`, `ip`, and when the form sent them
 *   `contact_from` and `fields`, lib/form/fields.ts); after a compaction it also
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
import { isRecord, parseJsonText } from "../common/json.ts";
import { damagedPath } from "../common/state_files.ts";
import { denoFs, type StorageFile, type StorageFs } from "./file_system.ts";
import type { ReceivedFile } from "../files/multipart_stream.ts";

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
  /** The field the contact came from when it was not `contact`; the line's `contact_from`. */
  readonly contactFrom?: string | undefined;
  /** The form's other fields, in the order sent; the line's `fields`, absent when none. */
  readonly fields?: Readonly<Record<string, string>> | undefined;
  /** The form of `FORMS` it came from (its destination); absent for the default form. */
  readonly form?: string | undefined;
  /**
   * The learned spam filter's score when it was accepted (lib/spam/spam_filter.ts): its
   * notification is marked and silent at or above the threshold. Kept in the outbox's row, so a
   * notification sent after a restart is marked alike.
   */
  readonly spamScore?: number | undefined;
  /**
   * The case (its first submission's id) this one follows up, written on its page (lib/cases/):
   * recorded as `follow_up`, so erasing the case erases it too (lib/storage/erasure.ts).
   */
  readonly followUp?: string | undefined;
  /**
   * The files sent with it (lib/files/multipart_stream.ts). Not kept in the outbox's row: the
   * `files` table keeps them (lib/storage/attachments.ts), and sends them after the text.
   */
  readonly files?: readonly ReceivedFile[] | undefined;
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
  /** Its form of `FORMS` (where it goes), from the line's head; absent for the default form. */
  readonly form?: string;
}

/** What {@linkcode loadOutbox} found. */
export interface OutboxIndex {
  /** Every entry that is pending or lacks its backup record, oldest first. */
  readonly entries: Map<string, OutboxEntry>;
  /** Bytes of the whole lines read. */
  readonly bytes: number;
  /**
   * Damaged lines: not whole JSON (a torn line, a crash mid-write), not a known operation, or
   * about no submission: skipped.
   */
  readonly skipped: number;
  /** Damaged lines the service kept aside, in {@linkcode damagedPath} (0 when there are none). */
  readonly keptAside?: number;
}

/** How a submission ended: it reached the chat, or it was given up. */
export type DoneResult = "delivered" | "given_up";

/**
 * An `add` line: the submission, and after a compaction its state (in this key order, before the
 * sender's fields).
 */
export interface AddOp extends OutboxSubmission {
  readonly op: "add";
  readonly status?: number | null;
  readonly attempts?: number;
  readonly first_error?: string | null;
  readonly last_error?: string | null;
  readonly last_ts?: string | null;
  readonly done?: DoneResult;
}

/** A `recorded` line: the backup record is written; what the sender was answered. */
export interface RecordedOp {
  readonly op: "recorded";
  readonly id: string;
  readonly status: number | null;
}

/** A `failed` line: a delivery attempt failed. */
export interface FailedOp {
  readonly op: "failed";
  readonly id: string;
  readonly ts: string;
  readonly error: string;
}

/** A `done` line: it reached the chat or was given up. */
export interface DoneOp {
  readonly op: "done";
  readonly id: string;
  readonly ts: string;
  readonly result: DoneResult;
}

/** A change to a submission already added: every line but `add`. */
export type OutboxChange = RecordedOp | FailedOp | DoneOp;

/** One line of the outbox file, as an operation. */
export type OutboxOp = AddOp | OutboxChange;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Serialises an operation as its line, keys in a fixed order (an `add` line's state before the
 * sender's fields). The one encoder of the file format.
 */
export function encodeOp(op: OutboxOp): string {
  switch (op.op) {
    case "add": {
      const { id, ts, name, contact, message, ip, contactFrom, fields, form } = op;
      return JSON.stringify({
        op: "add",
        id,
        ts,
        // contactd's own (a checked id), so in the head: the queue paces by its chat.
        ...(form === undefined ? {} : { form }),
        ...(op.status === undefined ? {} : { status: op.status }),
        ...(op.attempts === undefined ? {} : {
          attempts: op.attempts,
          first_error: op.first_error ?? null,
          last_error: op.last_error ?? null,
          last_ts: op.last_ts ?? null,
        }),
        ...(op.done === undefined ? {} : { done: op.done }),
        name,
        contact,
        message,
        ip,
        ...(contactFrom === undefined ? {} : { contact_from: contactFrom }),
        ...(fields === undefined ? {} : { fields }),
      }) + "\n";
    }
    case "recorded":
      return JSON.stringify({ op: op.op, id: op.id, status: op.status }) + "\n";
    case "failed":
      return JSON.stringify({ op: op.op, id: op.id, ts: op.ts, error: op.error }) + "\n";
    case "done":
      return JSON.stringify({ op: op.op, id: op.id, ts: op.ts, result: op.result }) + "\n";
  }
}

/** Serialises a new submission as its `add` line. */
export function addLine(submission: OutboxSubmission): string {
  const { id, ts, name, contact, message, ip, contactFrom, fields, form } = submission;
  return encodeOp({ op: "add", id, ts, name, contact, message, ip, contactFrom, fields, form });
}

/** An `add` line with the entry's state folded in, before the sender's fields (compaction). */
export function compactedLine(submission: OutboxSubmission, entry: OutboxEntry): string {
  const { id, ts, name, contact, message, ip, contactFrom, fields, form } = submission;
  return encodeOp({
    op: "add",
    form,
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
    contactFrom,
    fields,
  });
}

/** Reads an `add` line back; `undefined` when it is not one. */
export function parseSubmissionLine(line: string): OutboxSubmission | undefined {
  const value = parseJsonText(line);
  if (!isRecord(value) || value.op !== "add") return undefined;
  const { id, ts, name, contact, message, ip, contact_from, fields, form } = value;
  const texts = [id, ts, name, contact, message, ip];
  if (!texts.every((text) => typeof text === "string")) return undefined;
  const kept = isRecord(fields) && Object.values(fields).every((text) => typeof text === "string");
  return {
    id,
    ts,
    name,
    contact,
    message,
    ip,
    ...(typeof contact_from === "string" ? { contactFrom: contact_from } : {}),
    ...(kept ? { fields } : {}),
    ...(typeof form === "string" ? { form } : {}),
  } as OutboxSubmission;
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
  if (_startsWith(bytes, ADD_START)) {
    const end = _indexOf(bytes, HEAD_END);
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
  submission: Pick<OutboxSubmission, "id" | "ts" | "form">,
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
    ...(submission.form === undefined ? {} : { form: submission.form }),
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
    ...(typeof head.form === "string" ? { form: head.form } : {}),
  };
}

/**
 * A line's head as the change it is; `undefined` for an `add` line, an unknown operation or
 * fields of the wrong type (a damaged line).
 */
export function parseChange(head: Record<string, unknown>): OutboxChange | undefined {
  const id = head.id;
  if (typeof id !== "string") return undefined;
  switch (head.op) {
    case "recorded":
      return typeof head.status === "number" || head.status === null
        ? { op: "recorded", id, status: head.status }
        : undefined;
    case "failed":
      return typeof head.ts === "string" && typeof head.error === "string"
        ? { op: "failed", id, ts: head.ts, error: head.error }
        : undefined;
    case "done":
      return typeof head.ts === "string" &&
          (head.result === "delivered" || head.result === "given_up")
        ? { op: "done", id, ts: head.ts, result: head.result }
        : undefined;
    default:
      return undefined;
  }
}

/**
 * Folds a change into `entry`: the one place a line's meaning is applied (the file's reader, the
 * service's window and the tests' store all use it). A second `done` changes nothing. The entry
 * is finished (nothing left to do for it) once it is done and recorded: see
 * {@linkcode finished}.
 */
export function applyOp(entry: OutboxEntry, change: OutboxChange): void {
  switch (change.op) {
    case "recorded":
      entry.status = change.status;
      return;
    case "failed":
      entry.attempts++;
      entry.firstError ??= change.error;
      entry.lastError = change.error;
      entry.lastTs = change.ts;
      return;
    case "done":
      if (entry.done === false) entry.done = change.result;
      return;
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
  file: Pick<StorageFile, "read" | "seek">,
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
    const bytes = _concat(pending, chunk.subarray(0, n));
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
 * `contactd pending` and tests: the service keeps only a window (lib/storage/outbox.ts). Read
 * only; it also counts the lines kept aside in {@linkcode damagedPath}.
 */
export async function loadOutbox(path: string, fs: StorageFs = denoFs): Promise<OutboxIndex> {
  const entries = new Map<string, OutboxEntry>();
  const keptAside = await _countLines(fs, damagedPath(path));
  let file: StorageFile;
  try {
    file = await fs.open(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { entries, bytes: 0, skipped: 0, keptAside };
    throw error;
  }
  let skipped = 0;
  try {
    const bytes = await scanLines(file, 0, (line, offset, length) => {
      const head = parseHead(line);
      if (head !== undefined && head.op === "add") {
        const added = entryOf(head, offset, length);
        if (added === undefined) skipped++;
        else entries.set(added.id, added);
        return;
      }
      const change = head === undefined ? undefined : parseChange(head);
      const entry = change === undefined ? undefined : entries.get(change.id);
      if (change === undefined || entry === undefined) return void skipped++;
      applyOp(entry, change);
      if (finished(entry)) entries.delete(entry.id);
    });
    return { entries, bytes, skipped, keptAside };
  } finally {
    file.close();
  }
}

/** The number of lines of the file at `path`; 0 when there is none. */
async function _countLines(fs: StorageFs, path: string): Promise<number> {
  let file: StorageFile;
  try {
    file = await fs.open(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw error;
  }
  try {
    let lines = 0;
    await scanLines(file, 0, () => void lines++);
    return lines;
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
  fs: StorageFs = denoFs,
): AsyncGenerator<OutboxSubmission | undefined> {
  const file = await fs.open(path, { read: true });
  try {
    for (const entry of entries) {
      // Past the end or another line: the file was compacted since; `undefined` says so.
      const line = await readAt(file, entry.offset, entry.length);
      yield line === undefined ? undefined : readSubmission(line, entry.id);
    }
  } finally {
    file.close();
  }
}

/**
 * The `add` line of `id` anywhere in `file` (scanned from the start): its offset, length and
 * bytes (without the newline); `undefined` when the file has none.
 */
export async function findAddLine(
  file: Pick<StorageFile, "read" | "seek">,
  id: string,
): Promise<{ offset: number; length: number; bytes: Uint8Array } | undefined> {
  let found: { offset: number; length: number; bytes: Uint8Array } | undefined;
  await scanLines(file, 0, (line, offset, length) => {
    const head = parseHead(line);
    if (head?.op === "add" && head.id === id) found = { offset, length, bytes: line.slice() };
  });
  return found;
}

/** The submission `id` from its `add` line; `undefined` when the line is not that. */
export function readSubmission(line: string, id: string): OutboxSubmission | undefined {
  const submission = parseSubmissionLine(line);
  return submission?.id === id ? submission : undefined;
}

/** The `length` bytes at `offset` of `file`, as text; `undefined` when the file ends before. */
export async function readAt(
  file: Pick<StorageFile, "read" | "seek">,
  offset: number,
  length: number,
): Promise<string | undefined> {
  await file.seek(offset, Deno.SeekMode.Start);
  const bytes = new Uint8Array(length);
  let got = 0;
  while (got < bytes.byteLength) {
    const n = await file.read(bytes.subarray(got));
    if (n === null) return undefined;
    got += n;
  }
  return decoder.decode(bytes);
}

/** `a` then `b`, as one array. */
function _concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b;
  const joined = new Uint8Array(a.byteLength + b.byteLength);
  joined.set(a);
  joined.set(b, a.byteLength);
  return joined;
}

function _startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.byteLength < prefix.byteLength) return false;
  for (let i = 0; i < prefix.byteLength; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

function _indexOf(bytes: Uint8Array, needle: Uint8Array): number {
  const first = needle[0]!;
  for (let at = bytes.indexOf(first); at >= 0; at = bytes.indexOf(first, at + 1)) {
    let i = 1;
    while (i < needle.byteLength && bytes[at + i] === needle[i]) i++;
    if (i === needle.byteLength) return at;
  }
  return -1;
}
