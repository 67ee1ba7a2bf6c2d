/**
 * The outbox: every validated submission, durable on disk before delivery starts, until it has
 * reached the chat (or is given up). One JSON line per event, appended and synced (group commit),
 * mode 0600, beside the backup file (`MESSAGES_FILE` + `.outbox`), compacted by contactd itself.
 * Memory holds an index of the pending submissions (ids, times, offsets), never their text.
 *
 * Lines, each with `op` and `id`:
 * - `add`: the submission (`ts`, `name`, `contact`, `message`, `ip`); after a compaction it also
 *   carries the state below (`status`, `attempts`, `first_error`, `last_error`, `last_ts`);
 * - `recorded`: its backup record was written; `status` is what the sender was answered, `null`
 *   when no answer could be given (contactd stopped first);
 * - `failed`: a delivery attempt failed at `ts` with `error`;
 * - `done`: it reached the chat (`result` `delivered`) or was given up (`given_up`).
 *
 * @module
 */
import { type Appender, createGroupAppender } from "./group_commit.ts";
import { isRecord } from "./json.ts";
import { pathSource, type TrackedFile, trackFile } from "./tracked_file.ts";

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

/** An `add` line with the entry's state folded in (what a compaction writes). */
function compactedLine(submission: OutboxSubmission, entry: OutboxEntry): string {
  const { id, ts, name, contact, message, ip } = submission;
  return JSON.stringify({
    op: "add",
    id,
    ts,
    name,
    contact,
    message,
    ip,
    ...(entry.status === undefined ? {} : { status: entry.status }),
    ...(entry.attempts === 0 ? {} : {
      attempts: entry.attempts,
      first_error: entry.firstError,
      last_error: entry.lastError,
      last_ts: entry.lastTs,
    }),
    ...(entry.done === false ? {} : { done: entry.done }),
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

/**
 * Folds one line into `entries`. Unknown or malformed lines are ignored (returns false), so a
 * torn line costs nothing but itself.
 */
export function applyLine(
  entries: Map<string, OutboxEntry>,
  line: string,
  offset: number,
  length: number,
): boolean {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return false;
  }
  if (!isRecord(value) || typeof value.id !== "string") return false;
  const id = value.id;
  if (value.op === "add") {
    if (typeof value.ts !== "string") return false;
    const attempts = typeof value.attempts === "number" ? value.attempts : 0;
    entries.set(id, {
      id,
      ts: value.ts,
      attempts,
      firstError: typeof value.first_error === "string" ? value.first_error : null,
      lastError: typeof value.last_error === "string" ? value.last_error : null,
      lastTs: typeof value.last_ts === "string" ? value.last_ts : null,
      status: typeof value.status === "number" || value.status === null ? value.status : undefined,
      done: value.done === "delivered" || value.done === "given_up" ? value.done : false,
      offset,
      length,
    });
    return true;
  }
  const entry = entries.get(id);
  if (entry === undefined) return false;
  switch (value.op) {
    case "recorded":
      entry.status = typeof value.status === "number" ? value.status : null;
      break;
    case "failed":
      entry.attempts++;
      entry.lastError = typeof value.error === "string" ? value.error : "unknown";
      entry.firstError ??= entry.lastError;
      entry.lastTs = typeof value.ts === "string" ? value.ts : null;
      break;
    case "done":
      entry.done = value.result === "given_up" ? "given_up" : "delivered";
      break;
    default:
      return false;
  }
  // Delivered (or given up) and recorded: nothing left to do for it.
  if (entry.done && entry.status !== undefined) entries.delete(id);
  return true;
}

/**
 * Reads an outbox file into its index, streaming (the file may be large); a missing file is an
 * empty outbox. A last line without its newline (a crash mid-write) is not counted.
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
  let offset = 0;
  try {
    let pending = new Uint8Array(0);
    const chunk = new Uint8Array(1 << 20);
    while (true) {
      const n = await file.read(chunk);
      if (n === null) break;
      const bytes = concat(pending, chunk.subarray(0, n));
      let start = 0;
      for (let end = bytes.indexOf(0x0a); end >= 0; end = bytes.indexOf(0x0a, start)) {
        const length = end + 1 - start;
        if (!applyLine(entries, decoder.decode(bytes.subarray(start, end)), offset, length)) {
          skipped++;
        }
        offset += length;
        start = end + 1;
      }
      pending = bytes.slice(start);
    }
  } finally {
    file.close();
  }
  return { entries, bytes: offset, skipped };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b;
  const joined = new Uint8Array(a.byteLength + b.byteLength);
  joined.set(a);
  joined.set(b, a.byteLength);
  return joined;
}

/** Options of {@linkcode openOutbox}. */
export interface OutboxOptions {
  /** Told when the file is readable or writable by group or others. */
  readonly onLoose?: (mode: number) => void;
  /** Compact once this many bytes are dead and they outweigh the live ones; default 1 MiB. */
  readonly compactAfterBytes?: number;
}

/** The outbox of a running service. */
export interface Outbox {
  /** Entries that are pending or lack their backup record, oldest first. Do not change them. */
  entries(): IterableIterator<OutboxEntry>;
  /** The entry of `id`, if the outbox still holds it. */
  get(id: string): OutboxEntry | undefined;
  /** Submissions not yet delivered nor given up. */
  readonly pendingCount: number;
  /** Appends a new submission, synced; rejects if it is not on disk. */
  add(submission: OutboxSubmission): Promise<void>;
  /** Notes that its backup record is written and what the sender was answered. */
  recorded(id: string, status: number | null): Promise<void>;
  /** Notes a failed delivery attempt. */
  failed(id: string, ts: string, error: string): Promise<void>;
  /** Notes that it reached the chat or was given up; it is pending no more at once. */
  done(id: string, ts: string, result: "delivered" | "given_up"): Promise<void>;
  /** The submission's text, read from the file. */
  read(id: string): Promise<OutboxSubmission>;
  /** Rewrites the file with only what is still needed. */
  compact(): Promise<void>;
  /** Waits for pending writes, then closes the file. */
  close(): Promise<void>;
}

/**
 * Opens (creating, mode 0600) the outbox at `path` and loads its index. Throws at once when it
 * cannot be opened, like the backup file.
 */
export async function openOutbox(path: string, options: OutboxOptions = {}): Promise<Outbox> {
  const source = pathSource(path, options.onLoose ?? (() => {}));
  const opened = await source.open();
  /** Identity of the file appends go to; compared with what the path names before each. */
  let fileId: string | null = opened.id;
  const index = await loadOutbox(path);
  let tracked: TrackedFile = trackFile(opened);
  let appender: Appender = createGroupAppender(tracked);
  // Opened now and kept: if the path is removed or replaced, this still reads the entries held,
  // so a compaction can write them to a new file there.
  let reader: Deno.FsFile | undefined = await Deno.open(path, { read: true });
  const { entries } = index;
  let fileBytes = opened.size;
  let liveBytes = 0;
  let pendingCount = 0;
  for (const entry of entries.values()) {
    liveBytes += entry.length;
    if (!entry.done) pendingCount++;
  }
  const compactAfter = options.compactAfterBytes ?? 1 << 20;
  // While a compaction runs, appends and reads wait for it.
  let gate: Promise<void> | undefined;
  let closed = false;
  const worthCompacting = () => {
    const dead = fileBytes - liveBytes;
    return dead >= compactAfter && dead > liveBytes;
  };

  const append = async (line: string): Promise<number> => {
    while (true) {
      while (gate !== undefined) await gate;
      if (fileId !== null && await source.identify() === fileId) break;
      // Removed, renamed or replaced under us: writing on would keep entries only in a file no
      // path names. Write what is held to a new file at the path first; throws while it cannot.
      await outbox.compact();
    }
    const offset = await appender.append(line);
    fileBytes = Math.max(fileBytes, offset + encoder.encode(line).byteLength);
    return offset;
  };

  const forget = (entry: OutboxEntry) => {
    if (entries.get(entry.id) !== entry) return;
    entries.delete(entry.id);
    liveBytes -= entry.length;
  };

  const maybeCompact = () => {
    if (!closed && gate === undefined && worthCompacting()) {
      outbox.compact().catch(() => {}); // a failed compaction leaves the old file, still valid
    }
  };

  // Reads share one handle (seek, then read): one at a time.
  let reads: Promise<unknown> = Promise.resolve();
  const readLine = (entry: OutboxEntry): Promise<string> => {
    const line = reads.then(async () => {
      reader ??= await Deno.open(path, { read: true });
      return await readAt(reader, entry.offset, entry.length);
    });
    reads = line.catch(() => {});
    return line;
  };

  const reopen = async () => {
    try {
      const file = await source.open();
      fileId = file.id;
      tracked = trackFile(file);
    } catch (error) {
      // Writes fail (and say why) until a later compaction manages to open the file again.
      fileId = null;
      tracked = { writeLines: () => Promise.resolve({ offsets: [], error }), close: () => {} };
    }
    appender = createGroupAppender(tracked);
  };

  const outbox: Outbox = {
    entries: () => entries.values(),
    get: (id) => entries.get(id),
    get pendingCount() {
      return pendingCount;
    },
    async add(submission) {
      const line = addLine(submission);
      const offset = await append(line);
      const length = encoder.encode(line).byteLength;
      entries.set(submission.id, {
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
      });
      liveBytes += length;
      pendingCount++;
    },
    async recorded(id, status) {
      const entry = entries.get(id);
      if (entry === undefined) return;
      entry.status = status;
      if (entry.done) forget(entry);
      await append(JSON.stringify({ op: "recorded", id, status }) + "\n");
      maybeCompact();
    },
    async failed(id, ts, error) {
      const entry = entries.get(id);
      if (entry === undefined) return;
      entry.attempts++;
      entry.firstError ??= error;
      entry.lastError = error;
      entry.lastTs = ts;
      await append(JSON.stringify({ op: "failed", id, ts, error }) + "\n");
    },
    async done(id, ts, result) {
      const entry = entries.get(id);
      if (entry === undefined || entry.done !== false) return;
      entry.done = result;
      pendingCount--;
      if (entry.status !== undefined) forget(entry);
      await append(JSON.stringify({ op: "done", id, ts, result }) + "\n");
      maybeCompact();
    },
    async read(id) {
      while (gate !== undefined) await gate;
      const entry = entries.get(id);
      if (entry === undefined) throw new Error(`outbox has no entry ${id}`);
      const submission = parseSubmissionLine(await readLine(entry));
      if (submission === undefined || submission.id !== id) {
        throw new Error(`outbox entry ${id} is unreadable`);
      }
      return submission;
    },
    async compact() {
      while (gate !== undefined) await gate;
      let release = () => {};
      gate = new Promise<void>((resolve) => (release = resolve));
      try {
        await appender.close(); // every queued line is in the old file
        const temporary = `${path}.tmp`;
        const out = await Deno.open(temporary, {
          write: true,
          create: true,
          truncate: true,
          mode: 0o600,
        });
        const moved: Array<[OutboxEntry, number, number]> = [];
        let size = 0;
        try {
          const lines: string[] = [];
          for (const entry of entries.values()) {
            const submission = parseSubmissionLine(await readLine(entry));
            if (submission === undefined) continue; // unreadable: nothing to deliver
            const line = compactedLine(submission, entry);
            const length = encoder.encode(line).byteLength;
            moved.push([entry, size, length]);
            size += length;
            lines.push(line);
            if (lines.length >= 256) await writeAll(out, lines.splice(0));
          }
          await writeAll(out, lines);
          await out.syncData();
        } finally {
          out.close();
        }
        // Both files are whole: a crash before the rename keeps the old one, after it the new.
        await Deno.rename(temporary, path);
        reader?.close();
        reader = await Deno.open(path, { read: true });
        liveBytes = 0;
        for (const [entry, offset, length] of moved) {
          entry.offset = offset;
          entry.length = length;
          liveBytes += length;
        }
        fileBytes = size;
      } finally {
        // Appends go on in the file at the path, the new one if the rename happened.
        await reopen();
        gate = undefined;
        release();
      }
    },
    async close() {
      closed = true;
      while (gate !== undefined) await gate;
      await appender.close();
      reader?.close();
      reader = undefined;
    },
  };
  if (worthCompacting()) await outbox.compact();
  return outbox;
}

/** The submissions of `entries`, read from the outbox at `path` (read only), in order. */
export async function* readSubmissions(
  path: string,
  entries: Iterable<OutboxEntry>,
): AsyncGenerator<OutboxSubmission> {
  const file = await Deno.open(path, { read: true });
  try {
    for (const entry of entries) {
      const submission = parseSubmissionLine(await readAt(file, entry.offset, entry.length));
      if (submission !== undefined) yield submission;
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

async function writeAll(file: Deno.FsFile, lines: readonly string[]): Promise<void> {
  if (lines.length === 0) return;
  const bytes = encoder.encode(lines.join(""));
  let written = 0;
  while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
}
