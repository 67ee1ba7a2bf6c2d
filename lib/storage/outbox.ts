/**
 * The outbox of a running service: every validated submission, durable on disk before delivery
 * starts, until it has reached the chat (or is given up). Lines (lib/storage/outbox_lines.ts) are
 * appended and synced (group commit), mode 0600, beside the backup file (`MESSAGES_FILE` +
 * `.outbox`), compacted by contactd itself (lib/storage/compaction.ts).
 *
 * Memory holds a bounded window (lib/storage/window.ts): the oldest pending submissions (their
 * ids, times, attempts and offsets, never their text) plus those whose backup record is not
 * written yet. The rest of a long backlog stays on disk as the file's tail and is read into the
 * window as it drains, oldest first. This file is the window's I/O shell: it reads and writes
 * through a {@linkcode StorageFs} and tells the window what happened.
 *
 * An offset is never trusted without checking what it points at: a line that is not the entry's
 * is looked for in the file, and only a line that is there but damaged is a verdict on the data
 * ({@linkcode OutboxEntryDamaged}); damaged lines are kept aside for the operator
 * (`MESSAGES_FILE.outbox.damaged`), logged, and never stop the service.
 *
 * @module
 */
import { damagedPath } from "../common/state_files.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { compactOutbox } from "./compaction.ts";
import { keepAside } from "./_damaged.ts";
import { denoFs, type StorageFile, type StorageFs, writeAll } from "./file_system.ts";
import { type Appender, createGroupAppender } from "./group_commit.ts";
import {
  addLine,
  encodeOp,
  findAddLine,
  newEntry,
  type OutboxChange,
  type OutboxEntry,
  type OutboxSubmission,
  parseHead,
  readAt,
  readSubmission,
  scanLines,
} from "./outbox_lines.ts";
import { pathSource, type TrackedFile, trackFile } from "./tracked_file.ts";
import { OutboxWindow, type TailScan } from "./window.ts";

export { outboxPath } from "../common/state_files.ts";
export {
  loadOutbox,
  type OutboxEntry,
  type OutboxIndex,
  type OutboxSubmission,
  readSubmissions,
} from "./outbox_lines.ts";

const encoder = new TextEncoder();

/** How many pending submissions an outbox holds in memory by default (the rest wait on disk). */
export const OUTBOX_WINDOW = 1024;

/** Options of {@linkcode openOutbox}. */
export interface OutboxOptions {
  /**
   * Where failures of background work (compaction, refill, directory sync) and damaged lines
   * are logged, each under its own event.
   */
  readonly log: Logger;
  /** Told when the file is readable or writable by group or others. */
  readonly onLoose?: (mode: number) => void;
  /** Compact once this many bytes are dead and they outweigh the live ones; default 1 MiB. */
  readonly compactAfterBytes?: number;
  /** How many pending submissions memory holds at most (the rest wait on disk); default 1024. */
  readonly window?: number;
  /** The file system (default: the real one); the tests pass one that holds or fails calls. */
  readonly fs?: StorageFs;
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
  /**
   * The submission's text, read from the file. Rejects with {@linkcode OutboxEntryDamaged} when
   * its line is damaged (a verdict on the data); any other rejection is an I/O error, not one.
   */
  read(id: string): Promise<OutboxSubmission>;
  /** Rewrites the file with only what is still needed. */
  compact(): Promise<void>;
  /** Waits for pending writes, then closes the file. */
  close(): Promise<void>;
}

/** An entry's line is in the file but damaged, or is not in it at all: its text is lost. */
export class OutboxEntryDamaged extends Error {
  /** The submission's id. */
  readonly id: string;

  constructor(id: string) {
    super(`outbox entry ${id} is damaged: its text cannot be read back`);
    this.name = "OutboxEntryDamaged";
    this.id = id;
  }
}

/** A tracked file whose every write fails with `error`. */
function _failing(error: unknown): TrackedFile {
  return { writeLines: () => Promise.resolve({ offsets: [], error }), close: () => {} };
}

/**
 * Opens (creating, mode 0600) the outbox at `path` and reads its window. Throws at once when it
 * cannot be opened, like the backup file. Damaged lines found are kept aside and logged
 * (`outbox_lines_damaged`); a compaction that fails at start is logged
 * (`outbox_compaction_failed`) and does not stop it.
 */
export async function openOutbox(path: string, options: OutboxOptions): Promise<Outbox> {
  const { log } = options;
  const fs = options.fs ?? denoFs;
  const source = pathSource(path, options.onLoose ?? (() => {}), fs);
  const opened = await source.open();
  /** Identity of the file appends go to; compared with what the path names before each. */
  let fileId: string | null = opened.id;
  let tracked: TrackedFile = trackFile(opened);
  let appender: Appender = createGroupAppender(tracked);
  // Opened now and kept: if the path is removed or replaced, this still reads the entries held,
  // so a compaction can write them to a new file there.
  let reader: StorageFile;
  try {
    reader = await fs.open(path, { read: true });
  } catch (error) {
    tracked.close();
    throw error;
  }
  const window = new OutboxWindow({
    capacity: options.window ?? OUTBOX_WINDOW,
    compactAfter: options.compactAfterBytes ?? 1 << 20,
    fileBytes: opened.size,
  });

  // While a compaction runs, appends and reads wait for it.
  let gate: Promise<void> | undefined;
  /** A refill in progress (it reads the tail while appends go on; compactions wait for it). */
  let refilling: Promise<void> | undefined;
  /** Writes under way (every call of `append`), awaited by `close`. */
  const writes = new Set<Promise<unknown>>();
  /**
   * Writes past the gate, in the appender, until the window knows of them (their entry held):
   * a compaction waits for these before it takes the window's entries, so no line written just
   * before it is left out of the new file.
   */
  const landing = new Set<Promise<unknown>>();
  let closed = false;

  // Reads share one handle (seek, then read): one at a time, each whether or not the last failed.
  let reads: Promise<unknown> = Promise.resolve();
  const withReader = <T>(use: (file: StorageFile) => Promise<T>): Promise<T> => {
    const result = reads.then(() => use(reader));
    reads = result.then(() => {}, () => {}); // the failure is the caller's, through `result`
    return result;
  };

  /** Entries whose damaged `add` line this run kept aside already. */
  const keptAside = new Set<string>();
  /** Reads damaged lines' bytes from `file` (the reader, inside `withReader`). */
  const rangesOf = async (
    file: StorageFile,
    ranges: TailScan["damaged"],
  ): Promise<Uint8Array[]> => {
    const lines: Uint8Array[] = [];
    for (const { offset, length } of ranges) {
      const text = await readAt(file, offset, length);
      if (text !== undefined) lines.push(encoder.encode(text));
    }
    return lines;
  };

  /**
   * The submission of a held entry, its offset checked: a line that is not its `add` is looked
   * for in the whole file (and the entry moved there); only an `add` line of its id that is
   * damaged, or none at all, is a verdict ({@linkcode OutboxEntryDamaged}, the line kept aside
   * and logged). I/O errors reject as they are.
   */
  const readEntry = (entry: OutboxEntry): Promise<OutboxSubmission> =>
    withReader(async (file) => {
      const line = await readAt(file, entry.offset, entry.length);
      const submission = line === undefined ? undefined : readSubmission(line, entry.id);
      if (submission !== undefined) return submission;
      const found = await findAddLine(file, entry.id);
      if (found !== undefined) {
        const text = new TextDecoder().decode(found.bytes);
        const moved = readSubmission(text, entry.id);
        if (moved !== undefined) {
          log("warn", {
            event: "outbox_entry_moved",
            id: entry.id,
            from: entry.offset,
            to: found.offset,
          });
          window.relocate(entry, found.offset, found.length);
          return moved;
        }
      }
      log("error", { event: "outbox_entry_damaged", id: entry.id, offset: entry.offset });
      if (found !== undefined && !keptAside.has(entry.id)) {
        keptAside.add(entry.id);
        try {
          await keepAside(fs, damagedPath(path), [found.bytes]);
        } catch (error) {
          log("error", { event: "outbox_keep_aside_failed", error: describeError(error) });
        }
      }
      throw new OutboxEntryDamaged(entry.id);
    });

  /** Reads the file from `from` into the window; see {@linkcode OutboxWindow.scan}. */
  const scanTail = (from: number, atStart: boolean): Promise<TailScan> =>
    withReader(async (file) => {
      const fold = window.scan(atStart);
      const end = await scanLines(file, from, (line, offset, length) => {
        fold.line(parseHead(line), offset, length);
      });
      return fold.finish(end);
    });

  /**
   * The window runs low and submissions wait on disk: read the next ones in. Appends go on
   * meanwhile (a line written after the scan read that far is applied by the window, see
   * {@linkcode OutboxWindow.written}); a compaction waits for it.
   */
  const wanted = () =>
    !closed && gate === undefined && refilling === undefined && window.wantsRefill();
  const refill = async (): Promise<void> => {
    if (!wanted()) return refilling;
    // Every tail add so far has its offset. Not as `refilling`: a write may be healing the file
    // by a compaction, which waits for refills.
    await Promise.allSettled(writes);
    if (!wanted()) return refilling;
    window.refillStarted();
    refilling = (async () => {
      try {
        window.refilled(await scanTail(window.scanFrom!, false));
      } finally {
        window.refillEnded();
        refilling = undefined;
      }
    })();
    return refilling;
  };
  /** A refill nobody waits for (it is tried again by the next `done` or compaction): logged. */
  const refillInBackground = () => {
    refill().catch((error) =>
      log("error", { event: "outbox_refill_failed", error: describeError(error) })
    );
  };

  /** Writes `change`'s line; the window applies it (at once if held, else once it is written). */
  const change = async (op: OutboxChange): Promise<void> => {
    const held = window.change(op);
    if (held === "skip") return;
    const offset = await append(encodeOp(op));
    if (held === "not_held") window.written(op, offset);
  };

  const maybeCompact = () => {
    if (!closed && gate === undefined && window.worthCompacting()) {
      // A failed compaction leaves the old file, still valid: logged, and tried again later.
      outbox.compact().catch((error) =>
        log("error", { event: "outbox_compaction_failed", error: describeError(error) })
      );
    }
  };

  const append = (line: string, onWritten?: (offset: number) => void): Promise<number> => {
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
      const landed = appender.append(line).then((offset) => {
        window.wrote(offset, encoder.encode(line).byteLength);
        onWritten?.(offset);
        return offset;
      });
      landing.add(landed);
      const gone = () => landing.delete(landed);
      landed.then(gone, gone);
      return await landed;
    })();
    writes.add(write);
    const settled = () => writes.delete(write);
    write.then(settled, settled);
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
      tracked = _failing(error);
    }
    appender = createGroupAppender(tracked);
  };

  /**
   * Copies the tail's lines from `from` to `out`: every submission's lines from its add on, except
   * those held in the window (their state is folded into their compacted lines). Damaged lines
   * are kept aside (logged). Returns the bytes written.
   */
  const copyTail = (from: number, out: StorageFile) =>
    withReader(async (file) => {
      const copied = new Set<string>();
      const damaged: Uint8Array[] = [];
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
        if (head === undefined) return void damaged.push(line.slice()); // a torn line
        const id = head.id as string;
        if (window.entries.has(id)) return;
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
      await keepDamaged(damaged);
      return size;
    });

  /** Keeps damaged lines aside and logs them; a failure to keep them is logged too. */
  const keepDamaged = async (lines: readonly Uint8Array[]): Promise<boolean> => {
    if (lines.length === 0) return true;
    log("warn", { event: "outbox_lines_damaged", lines: lines.length, file: damagedPath(path) });
    try {
      await keepAside(fs, damagedPath(path), lines);
      return true;
    } catch (error) {
      log("error", { event: "outbox_keep_aside_failed", error: describeError(error) });
      return false;
    }
  };

  const outbox: Outbox = {
    entries: () => window.entries.values(),
    get: (id) => window.entries.get(id),
    get pendingCount() {
      return window.pendingCount;
    },
    async add(submission) {
      const line = addLine(submission);
      const toTail = window.addToTail();
      try {
        // The window learns of the line as it lands, before any compaction can look.
        await append(line, (offset) => {
          if (toTail) window.addedToTail(offset);
          else window.hold(newEntry(submission, offset, encoder.encode(line).byteLength));
        });
      } catch (error) {
        if (toTail) window.addFailed();
        throw error;
      }
    },
    async recorded(id, status) {
      await change({ op: "recorded", id, status });
      maybeCompact();
    },
    async failed(id, ts, error) {
      await change({ op: "failed", id, ts, error });
    },
    async done(id, ts, result) {
      await change({ op: "done", id, ts, result });
      // Its line is written: a refill that fails (it is tried again by the next done or
      // compaction) does not make this one fail; it is logged.
      await refill().catch((error) =>
        log("error", { event: "outbox_refill_failed", error: describeError(error) })
      );
      maybeCompact();
    },
    async read(id) {
      while (gate !== undefined) await gate;
      const entry = window.entries.get(id);
      if (entry === undefined) throw new Error(`outbox has no entry ${id}`);
      return await readEntry(entry);
    },
    async compact() {
      while (gate !== undefined || refilling !== undefined) await (gate ?? refilling);
      let release = () => {};
      gate = new Promise<void>((resolve) => (release = resolve));
      const before = fileId;
      let renamed = false;
      try {
        await appender.close(); // every queued line is in the old file
        await Promise.allSettled(landing); // ...and known to the window
        const from = window.scanFrom;
        const compaction = await compactOutbox(fs, path, {
          entries: [...window.entries.values()],
          readEntry: (entry) =>
            readEntry(entry).catch((error) => {
              if (error instanceof OutboxEntryDamaged) return undefined;
              throw error;
            }),
          ...(from === undefined ? {} : { copyTail: (out) => copyTail(from, out) }),
        }, log);
        renamed = true;
        const old = reader;
        reader = compaction.reader;
        old.close();
        window.compacted(compaction);
      } finally {
        // Appends go on in the file at the path: the new one if the rename happened, else the
        // old one if the path still names it. Never a file the path names now but that lacks
        // what is held (removed under us, and the rewrite failed): appends fail until it works.
        await reopen();
        if (!renamed && fileId !== before) {
          tracked.close();
          fileId = null;
          tracked = _failing(
            new Error("the outbox was removed or replaced and could not be rewritten"),
          );
          appender = createGroupAppender(tracked);
        }
        gate = undefined;
        release();
        refillInBackground(); // one skipped while this ran
      }
    },
    async close() {
      closed = true;
      await Promise.allSettled(writes);
      while (gate !== undefined || refilling !== undefined) {
        await Promise.allSettled([gate ?? refilling]);
      }
      await appender.close();
      reader.close();
    },
  };

  const scan = await scanTail(0, true);
  window.started(scan);
  // Damaged lines before the tail are kept aside now; those in the tail by the compaction's copy.
  const scanFrom = window.scanFrom ?? Infinity;
  const before = scan.damaged.filter((line) => line.offset < scanFrom);
  const kept = await keepDamaged(await withReader((file) => rangesOf(file, before)));
  // With damage kept aside the file is rewritten without it; a failure is logged, not fatal.
  if ((kept && scan.damaged.length > 0) || window.worthCompacting()) {
    try {
      await outbox.compact();
    } catch (error) {
      log("error", { event: "outbox_compaction_failed", error: describeError(error) });
    }
  }
  return outbox;
}
