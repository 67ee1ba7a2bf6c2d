/**
 * The outbox of a running service: every validated submission, durable on disk before delivery
 * starts, until it has reached the chat (or is given up). Lines (lib/storage/outbox_lines.ts) are appended
 * and synced (group commit), mode 0600, beside the backup file (`MESSAGES_FILE` + `.outbox`),
 * compacted by contactd itself.
 *
 * Memory holds a bounded window: the oldest pending submissions (at most `window`, their ids,
 * times, attempts and offsets, never their text) plus those whose backup record is not written
 * yet. The rest of a long backlog stays on disk as the file's tail, from `scanFrom` on, and is
 * read into the window as it drains, oldest first.
 *
 * @module
 */
import { type Appender, createGroupAppender } from "./group_commit.ts";
import {
  addLine,
  applyOp,
  compactedLine,
  entryOf,
  finished,
  newEntry,
  type OutboxEntry,
  type OutboxSubmission,
  parseHead,
  parseSubmissionLine,
  readAt,
  scanLines,
} from "./outbox_lines.ts";
import { pathSource, type TrackedFile, trackFile } from "./tracked_file.ts";

export {
  loadOutbox,
  type OutboxEntry,
  type OutboxIndex,
  outboxPath,
  type OutboxSubmission,
  readSubmissions,
} from "./outbox_lines.ts";

const encoder = new TextEncoder();

/** Options of {@linkcode openOutbox}. */
export interface OutboxOptions {
  /** Told when the file is readable or writable by group or others. */
  readonly onLoose?: (mode: number) => void;
  /** Compact once this many bytes are dead and they outweigh the live ones; default 1 MiB. */
  readonly compactAfterBytes?: number;
  /** How many pending submissions memory holds at most (the rest wait on disk); default 1024. */
  readonly window?: number;
}

/** The outbox of a running service. */
export interface Outbox {
  /**
   * The window, oldest first: pending entries and entries whose backup record is not written.
   * Do not change them.
   */
  entries(): IterableIterator<OutboxEntry>;
  /** The entry of `id`, if the window holds it. */
  get(id: string): OutboxEntry | undefined;
  /** Submissions not yet delivered nor given up, in the window and on disk. */
  readonly pendingCount: number;
  /** Appends a new submission, synced; rejects if it is not on disk. */
  add(submission: OutboxSubmission): Promise<void>;
  /** Notes that its backup record is written and what the sender was answered. */
  recorded(id: string, status: number | null): Promise<void>;
  /** Notes a failed delivery attempt. */
  failed(id: string, ts: string, error: string): Promise<void>;
  /**
   * Notes that it reached the chat or was given up; it is pending no more at once. Once the
   * window runs low, the next pending submissions on disk are read into it before this resolves.
   */
  done(id: string, ts: string, result: "delivered" | "given_up"): Promise<void>;
  /** The submission's text, read from the file. */
  read(id: string): Promise<OutboxSubmission>;
  /** Rewrites the file with only what is still needed. */
  compact(): Promise<void>;
  /** Waits for pending writes, then closes the file. */
  close(): Promise<void>;
}

/** What a scan of the file's tail found for the window. */
interface TailScan {
  /** Pending entries read into the window. */
  moved: number;
  /** Where the first `add` left on disk is (undefined when none was). */
  stopAt: number | undefined;
  /** At start only: pending submissions left on disk. */
  left: number;
  /** Lines that were not whole JSON. */
  skipped: number;
  /** Where the whole lines read end. */
  end: number;
}

/**
 * Opens (creating, mode 0600) the outbox at `path` and reads its window. Throws at once when it
 * cannot be opened, like the backup file.
 */
export async function openOutbox(path: string, options: OutboxOptions = {}): Promise<Outbox> {
  const source = pathSource(path, options.onLoose ?? (() => {}));
  const opened = await source.open();
  /** Identity of the file appends go to; compared with what the path names before each. */
  let fileId: string | null = opened.id;
  let tracked: TrackedFile = trackFile(opened);
  let appender: Appender = createGroupAppender(tracked);
  // Opened now and kept: if the path is removed or replaced, this still reads the entries held,
  // so a compaction can write them to a new file there.
  let reader: Deno.FsFile = await Deno.open(path, { read: true });
  const capacity = options.window ?? 1024;
  const compactAfter = options.compactAfterBytes ?? 1 << 20;

  /** The window; see the module documentation. */
  const entries = new Map<string, OutboxEntry>();
  let windowPending = 0;
  /** Pending submissions on disk only, all with their `add` line at or after `scanFrom`. */
  let tailPending = 0;
  let scanFrom = Infinity;
  let fileBytes = opened.size;
  let windowBytes = 0;
  // While a compaction runs, appends and reads wait for it.
  let gate: Promise<void> | undefined;
  /** A refill in progress (it reads the tail while appends go on; compactions wait for it). */
  let refilling: Promise<void> | undefined;
  /** While a refill runs: the first offset of an add put to the tail meanwhile. */
  let addedDuringRefill = Infinity;
  /**
   * Entries a refill read in: up to which offset it had read the file, and which file (each
   * compaction starts a new one, `generation`): a line written to a later file came after.
   */
  const readUpTo = new WeakMap<OutboxEntry, { generation: number; offset: number }>();
  let generation = 0;
  /**
   * Changes to submissions not in the window, written while a refill ran and finished before it
   * read them in: applied once it has (their lines came after what it read).
   */
  const missedDuringRefill: Array<{ id: string; offset: number; apply(e: OutboxEntry): void }> = [];
  /** Writes under way (every call of `append`), awaited by `close`. */
  const writes = new Set<Promise<unknown>>();
  let closed = false;

  // Reads share one handle (seek, then read): one at a time.
  let reads: Promise<unknown> = Promise.resolve();
  const withReader = <T>(use: (file: Deno.FsFile) => Promise<T>): Promise<T> => {
    const result = reads.then(() => use(reader));
    reads = result.catch(() => {});
    return result;
  };
  const readLine = (entry: OutboxEntry) =>
    withReader((file) => readAt(file, entry.offset, entry.length));

  const hold = (entry: OutboxEntry) => {
    entries.set(entry.id, entry);
    windowBytes += entry.length;
    if (entry.done === false) windowPending++;
  };
  const forget = (entry: OutboxEntry) => {
    if (entries.get(entry.id) !== entry) return;
    entries.delete(entry.id);
    windowBytes -= entry.length;
    if (entry.done === false) windowPending--;
  };
  const setStatus = (entry: OutboxEntry, status: number | null) => {
    entry.status = status;
    if (finished(entry)) forget(entry);
  };
  const noteFailure = (entry: OutboxEntry, ts: string, error: string) => {
    entry.attempts++;
    entry.firstError ??= error;
    entry.lastError = error;
    entry.lastTs = ts;
  };
  const setDone = (entry: OutboxEntry, result: "delivered" | "given_up") => {
    entry.done = result;
    windowPending--;
    if (finished(entry)) forget(entry);
  };

  /**
   * Reads the file from `from` and moves pending entries it finds, not already held, into the
   * window until it holds `capacity`. At start (`atStart`) it also counts the pending ones it
   * leaves on disk, and holds every submission that lacks its backup record, however many (few:
   * those in flight at a crash), for recovery.
   */
  const scanTail = (from: number, atStart: boolean): Promise<TailScan> =>
    withReader(async (file) => {
      const fresh = new Map<string, OutboxEntry>();
      const unrecorded = new Map<string, OutboxEntry>();
      const scan: TailScan = { moved: 0, stopAt: undefined, left: 0, skipped: 0, end: from };
      scan.end = await scanLines(file, from, (line, offset, length) => {
        const head = parseHead(line);
        if (head === undefined) return void scan.skipped++;
        const id = head.id as string;
        if (head.op === "add") {
          if (entries.has(id)) return;
          const entry = entryOf(head, offset, length);
          if (entry === undefined) return void scan.skipped++;
          // Pending ones count against the window (a delivered one waiting for its record is
          // let go as soon as it is written).
          if (scan.stopAt === undefined && windowPending + fresh.size < capacity) {
            fresh.set(id, entry);
            return;
          }
          scan.stopAt ??= offset;
          if (!atStart) return;
          if (entry.done === false) scan.left++;
          if (entry.status === undefined) unrecorded.set(id, entry);
          return;
        }
        const entry = fresh.get(id) ?? unrecorded.get(id);
        if (entry === undefined) {
          // Every line about a submission follows its add: read from the start, a `done` for
          // one not held is for one left on disk.
          if (atStart && head.op === "done" && !entries.has(id)) scan.left--;
          return;
        }
        const wasPending = entry.done === false;
        if (!applyOp(entry, head)) scan.skipped++;
        if (finished(entry)) fresh.delete(id);
        // Left on disk and counted pending, now done: pending no more.
        if (wasPending && entry.done !== false && unrecorded.has(id)) scan.left--;
        if (entry.status !== undefined) unrecorded.delete(id);
      });
      for (const entry of fresh.values()) {
        // Pending ones join the window. At start so do delivered ones without their backup
        // record (recovery writes it); later those are new submissions whose sender is being
        // answered, which the callers' lane finishes.
        if (entry.done === false) scan.moved++;
        else if (!atStart) continue;
        hold(entry);
        readUpTo.set(entry, { generation, offset: scan.end });
      }
      for (const entry of unrecorded.values()) {
        hold(entry);
        if (entry.done === false) scan.left--;
      }
      return scan;
    });

  /**
   * The window runs low and submissions wait on disk: read the next ones in. Appends go on
   * meanwhile (a line written after the scan read that far is applied by its writer, see
   * `missedThenRead`); a compaction waits for it.
   */
  const wanted = () =>
    !closed && gate === undefined && refilling === undefined && scanFrom !== Infinity &&
    windowPending <= capacity / 2;
  const refill = async (): Promise<void> => {
    if (!wanted()) return refilling;
    // Every tail add so far has its offset. Not as `refilling`: a write may be healing the file
    // by a compaction, which waits for refills.
    await Promise.allSettled(writes);
    if (!wanted()) return refilling;
    addedDuringRefill = Infinity;
    refilling = (async () => {
      try {
        const scan = await scanTail(scanFrom, false);
        tailPending = scan.stopAt === undefined ? 0 : Math.max(0, tailPending - scan.moved);
        scanFrom = Math.min(scan.stopAt ?? Infinity, addedDuringRefill);
        for (const change of missedDuringRefill) {
          const entry = missedThenRead(change.id, change.offset);
          if (entry !== undefined) change.apply(entry);
        }
      } finally {
        missedDuringRefill.length = 0;
        refilling = undefined;
      }
    })();
    return refilling;
  };

  /**
   * An entry that was not in the window when a change to it was asked for, but that a refill read
   * in before the change's line was on disk: the change must still be applied to it.
   */
  const missedThenRead = (id: string, offset: number): OutboxEntry | undefined => {
    const entry = entries.get(id);
    const read = entry === undefined ? undefined : readUpTo.get(entry);
    if (read === undefined) return undefined;
    // `offset` is in the file of now: a compaction in between (which copied the entry from memory,
    // without this change) means the line came after what was read.
    return read.generation !== generation || read.offset <= offset ? entry : undefined;
  };

  /**
   * Writes `line`, a change to submission `id`; `apply` makes the change in memory. If the
   * window held it when asked, `apply` ran already (`held`); otherwise a refill may read it in
   * meanwhile, without this line: then the change is applied to what it read.
   */
  const change = async (
    id: string,
    line: string,
    held: boolean,
    apply: (entry: OutboxEntry) => void,
  ): Promise<void> => {
    const offset = await append(line);
    if (held) return;
    const entry = missedThenRead(id, offset);
    if (entry !== undefined) apply(entry);
    else if (refilling !== undefined) missedDuringRefill.push({ id, offset, apply });
  };

  const worthCompacting = () => {
    const tailBytes = scanFrom === Infinity ? 0 : fileBytes - scanFrom;
    const dead = fileBytes - windowBytes - tailBytes;
    return dead >= compactAfter && dead > windowBytes + tailBytes;
  };
  const maybeCompact = () => {
    if (!closed && gate === undefined && worthCompacting()) {
      outbox.compact().catch(() => {}); // a failed compaction leaves the old file, still valid
    }
  };

  const append = (line: string): Promise<number> => {
    if (closed) return Promise.reject(new Error("the outbox is closed"));
    const write = (async () => {
      while (true) {
        while (gate !== undefined) await gate;
        const current = fileId !== null && await source.identify() === fileId;
        if (gate !== undefined) continue; // a compaction began meanwhile: look again after it
        if (current) break;
        // Removed, renamed or replaced under us: writing on would keep entries only in a file no
        // path names. Write what is held to a new file at the path first; throws while it cannot.
        await outbox.compact();
      }
      const offset = await appender.append(line);
      fileBytes = Math.max(fileBytes, offset + encoder.encode(line).byteLength);
      return offset;
    })();
    writes.add(write);
    write.then(() => writes.delete(write), () => writes.delete(write));
    return write;
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

  /**
   * Copies the tail's lines from `from` to `out`: every submission's lines from its add on, except
   * those held in the window (their state is folded into their compacted lines). Returns the bytes
   * written.
   */
  const copyTail = (from: number, out: Deno.FsFile) =>
    withReader(async (file) => {
      const copied = new Set<string>();
      let buffer: Uint8Array[] = [];
      let buffered = 0;
      let size = 0;
      const flush = async () => {
        const joined = new Uint8Array(buffered);
        let at = 0;
        for (const line of buffer) {
          joined.set(line, at);
          at += line.byteLength;
        }
        buffer = [];
        buffered = 0;
        await writeAll(out, joined);
      };
      await scanLines(file, from, (line, _offset, length) => {
        const head = parseHead(line);
        if (head === undefined) return; // a torn line
        const id = head.id as string;
        if (entries.has(id)) return;
        if (head.op === "add") copied.add(id);
        else if (!copied.has(id)) return; // about a submission already finished
        const copy = new Uint8Array(length);
        copy.set(line);
        copy[length - 1] = 0x0a;
        buffer.push(copy);
        buffered += length;
        size += length;
        if (buffered >= 1 << 20) return flush();
      });
      await flush();
      return size;
    });

  const outbox: Outbox = {
    entries: () => entries.values(),
    get: (id) => entries.get(id),
    get pendingCount() {
      return windowPending + tailPending;
    },
    async add(submission) {
      const line = addLine(submission);
      // Oldest first: while submissions wait on disk, new ones wait behind them.
      const toTail = scanFrom !== Infinity || windowPending >= capacity;
      if (toTail) tailPending++;
      let offset: number;
      try {
        offset = await append(line);
      } catch (error) {
        if (toTail) tailPending--;
        throw error;
      }
      const length = encoder.encode(line).byteLength;
      if (toTail) {
        scanFrom = Math.min(scanFrom, offset);
        if (refilling !== undefined) addedDuringRefill = Math.min(addedDuringRefill, offset);
        return;
      }
      hold(newEntry(submission, offset, length));
    },
    async recorded(id, status) {
      const entry = entries.get(id);
      if (entry !== undefined) setStatus(entry, status);
      const line = JSON.stringify({ op: "recorded", id, status }) + "\n";
      await change(id, line, entry !== undefined, (late) => setStatus(late, status));
      maybeCompact();
    },
    async failed(id, ts, error) {
      const entry = entries.get(id);
      if (entry !== undefined) noteFailure(entry, ts, error);
      const line = JSON.stringify({ op: "failed", id, ts, error }) + "\n";
      await change(id, line, entry !== undefined, (late) => noteFailure(late, ts, error));
    },
    async done(id, ts, result) {
      const entry = entries.get(id);
      if (entry !== undefined) {
        if (entry.done !== false) return;
        setDone(entry, result);
      } else {
        // A new submission whose add went to the tail (the window was full), sent by its caller.
        tailPending = Math.max(0, tailPending - 1);
      }
      const line = JSON.stringify({ op: "done", id, ts, result }) + "\n";
      await change(id, line, entry !== undefined, (late) => {
        if (late.done === false) setDone(late, result);
      });
      // Its line is written: a refill that fails (it is tried again by the next done or
      // compaction) does not make this one fail.
      await refill().catch(() => {});
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
      while (gate !== undefined || refilling !== undefined) await (gate ?? refilling);
      let release = () => {};
      gate = new Promise<void>((resolve) => (release = resolve));
      const before = fileId;
      let renamed = false;
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
        const unreadable: OutboxEntry[] = [];
        let size = 0;
        let tailSize = 0;
        try {
          const lines: string[] = [];
          for (const entry of entries.values()) {
            const submission = parseSubmissionLine(await readLine(entry));
            if (submission === undefined || submission.id !== entry.id) {
              unreadable.push(entry); // nothing left to deliver: let it go
              continue;
            }
            const line = compactedLine(submission, entry);
            const length = encoder.encode(line).byteLength;
            moved.push([entry, size, length]);
            size += length;
            lines.push(line);
            if (lines.length >= 256) await writeAll(out, encoder.encode(lines.splice(0).join("")));
          }
          await writeAll(out, encoder.encode(lines.join("")));
          if (scanFrom !== Infinity) tailSize = await copyTail(scanFrom, out);
          await out.syncData();
        } finally {
          out.close();
        }
        // Both files are whole: a crash before the rename keeps the old one, after it the new.
        await Deno.rename(temporary, path);
        renamed = true;
        generation++;
        await syncDirectory(path);
        reader.close();
        reader = await Deno.open(path, { read: true });
        for (const entry of unreadable) forget(entry);
        windowBytes = 0;
        for (const [entry, offset, length] of moved) {
          entry.offset = offset;
          entry.length = length;
          windowBytes += length;
        }
        if (scanFrom !== Infinity) scanFrom = size;
        fileBytes = size + tailSize;
      } finally {
        // Appends go on in the file at the path: the new one if the rename happened, else the
        // old one if the path still names it. Never a file the path names now but that lacks
        // what is held (removed under us, and the rewrite failed): appends fail until it works.
        await reopen();
        if (!renamed && fileId !== before) {
          tracked.close();
          fileId = null;
          const error = new Error("the outbox was removed or replaced and could not be rewritten");
          tracked = { writeLines: () => Promise.resolve({ offsets: [], error }), close: () => {} };
          appender = createGroupAppender(tracked);
        }
        gate = undefined;
        release();
        refill().catch(() => {}); // one skipped while this ran
      }
    },
    async close() {
      closed = true;
      await Promise.allSettled(writes);
      while (gate !== undefined || refilling !== undefined) {
        await (gate ?? refilling)?.catch(() => {});
      }
      await appender.close();
      reader.close();
    },
  };

  const scan = await scanTail(0, true);
  if (scan.stopAt !== undefined) {
    scanFrom = scan.stopAt;
    tailPending = Math.max(0, scan.left);
  }
  if (worthCompacting()) await outbox.compact();
  return outbox;
}

/** Makes a rename in `path`'s directory durable (best effort: not every system allows it). */
async function syncDirectory(path: string): Promise<void> {
  const slash = path.lastIndexOf("/");
  try {
    const directory = await Deno.open(slash < 0 ? "." : path.slice(0, slash) || "/", {
      read: true,
    });
    try {
      await directory.syncData();
    } finally {
      directory.close();
    }
  } catch {
    // The file itself is synced; only a power loss right after could bring the old one back.
  }
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
}
