/**
 * The outbox's window, with no I/O: which entries memory holds (the oldest pending submissions,
 * at most `capacity`, plus those whose backup record is not written yet), the counters (pending
 * in the window and on disk only, bytes live and dead), where on disk the next pending ones are
 * (`scanFrom`), whether a refill or a compaction is due, and how a change written while a refill
 * read the file reaches the entry it read. lib/storage/outbox.ts does the reading and writing and
 * tells the window what happened; every change goes through the file format's one
 * {@linkcode applyOp}.
 *
 * @module
 */
import {
  applyOp,
  entryOf,
  finished,
  type OutboxChange,
  type OutboxEntry,
  parseChange,
} from "./outbox_lines.ts";

/** What a scan of the file's tail found for the window. */
export interface TailScan {
  /** Pending entries read into the window. */
  readonly moved: number;
  /** Where the first `add` left on disk is (undefined when none was). */
  readonly stopAt: number | undefined;
  /** At start only: pending submissions left on disk. */
  readonly left: number;
  /** Damaged lines: not JSON, an unknown operation or wrong fields, where they are. */
  readonly damaged: ReadonlyArray<{ readonly offset: number; readonly length: number }>;
  /** Where the whole lines read end. */
  readonly end: number;
}

/** Folds the lines of one scan of the file's tail; see {@linkcode OutboxWindow.scan}. */
export interface TailFold {
  /** One whole line: its parsed head (`undefined` when it is not JSON), offset and length. */
  line(head: Record<string, unknown> | undefined, offset: number, length: number): void;
  /** The scan reached `end`: entries found join the window. */
  finish(end: number): TailScan;
}

/** What a compaction wrote, for {@linkcode OutboxWindow.compacted}. */
export interface CompactedLayout {
  /** Each entry copied, with its new offset and length. */
  readonly moved: ReadonlyArray<readonly [OutboxEntry, number, number]>;
  /** Entries whose line could not be copied (damaged): no longer held. */
  readonly dropped: readonly OutboxEntry[];
  /** Bytes of the compacted entries (where the copied tail starts). */
  readonly size: number;
  /** Bytes of the copied tail. */
  readonly tailSize: number;
}

/** The window of an outbox; see the module documentation. */
export class OutboxWindow {
  /** Held entries, oldest first. Callers must not change them. */
  readonly entries: Map<string, OutboxEntry> = new Map();
  /** How many pending submissions memory holds at most. */
  readonly capacity: number;
  /** Dead bytes that make a compaction worth it (once they also outweigh the live ones). */
  readonly compactAfter: number;
  /** Pending submissions on disk only, all with their `add` line at or after `scanFrom`. */
  #tailPending = 0;
  /** Where the first pending submission not held is; `Infinity` when every one is held. */
  #scanFrom = Infinity;
  #pending = 0;
  #bytes = 0;
  #fileBytes: number;
  /** Each compaction starts a new file: a line in a later file came after what a scan read. */
  #generation = 0;
  /** Entries a refill read in: up to which offset of which file it had read. */
  readonly #readUpTo = new WeakMap<OutboxEntry, { generation: number; offset: number }>();
  /** Changes to entries not held, written while a refill ran: applied once it has read them. */
  #missed: Array<{ offset: number; change: OutboxChange }> = [];
  #refilling = false;
  #addedDuringRefill = Infinity;

  constructor(options: { capacity: number; compactAfter: number; fileBytes: number }) {
    this.capacity = options.capacity;
    this.compactAfter = options.compactAfter;
    this.#fileBytes = options.fileBytes;
  }

  /** Submissions not yet delivered nor given up, held and on disk. */
  get pendingCount(): number {
    return this.#pending + this.#tailPending;
  }

  /** Where the next scan of the tail starts; `undefined` when nothing waits on disk. */
  get scanFrom(): number | undefined {
    return this.#scanFrom === Infinity ? undefined : this.#scanFrom;
  }

  /** Holds `entry` (a new submission, or one read from the file). */
  hold(entry: OutboxEntry): void {
    this.entries.set(entry.id, entry);
    this.#bytes += entry.length;
    if (entry.done === false) this.#pending++;
  }

  #forget(entry: OutboxEntry): void {
    if (this.entries.get(entry.id) !== entry) return;
    this.entries.delete(entry.id);
    this.#bytes -= entry.length;
    if (entry.done === false) this.#pending--;
  }

  /** Applies `change` to a held entry, keeping the counters; lets it go once finished. */
  #apply(entry: OutboxEntry, change: OutboxChange): void {
    const wasPending = entry.done === false;
    applyOp(entry, change);
    if (wasPending && entry.done !== false) this.#pending--;
    if (finished(entry)) this.#forget(entry);
  }

  /**
   * Whether a new submission's `add` goes to the tail, not the window (oldest first: while
   * submissions wait on disk, new ones wait behind them). When it does, it counts as pending on
   * disk at once; {@linkcode addFailed} takes that back.
   */
  addToTail(): boolean {
    const toTail = this.#scanFrom !== Infinity || this.#pending >= this.capacity;
    if (toTail) this.#tailPending++;
    return toTail;
  }

  /** An `add` counted by {@linkcode addToTail} was not written. */
  addFailed(): void {
    this.#tailPending--;
  }

  /** An `add` that went to the tail is on disk at `offset`. */
  addedToTail(offset: number): void {
    this.#scanFrom = Math.min(this.#scanFrom, offset);
    if (this.#refilling) this.#addedDuringRefill = Math.min(this.#addedDuringRefill, offset);
  }

  /** A line of `length` bytes is on disk at `offset`. */
  wrote(offset: number, length: number): void {
    this.#fileBytes = Math.max(this.#fileBytes, offset + length);
  }

  /**
   * A change asked for, before its line is written: applied at once to the held entry. Returns
   * `"held"` when it was, `"skip"` when there is nothing to write (a second `done`), else
   * `"not_held"`: then {@linkcode written} applies it once its line is on disk.
   */
  change(change: OutboxChange): "held" | "skip" | "not_held" {
    const entry = this.entries.get(change.id);
    if (entry === undefined) {
      // A new submission whose add went to the tail (the window was full), sent by its caller.
      if (change.op === "done") this.#tailPending = Math.max(0, this.#tailPending - 1);
      return "not_held";
    }
    if (change.op === "done" && entry.done !== false) return "skip";
    this.#apply(entry, change);
    return "held";
  }

  /**
   * The line of a change to an entry not held when it was asked for is on disk at `offset`: if a
   * refill read the entry in without it, it is applied now, or once the running refill ends.
   */
  written(change: OutboxChange, offset: number): void {
    const entry = this.#missedThenRead(change.id, offset);
    if (entry !== undefined) this.#apply(entry, change);
    else if (this.#refilling) this.#missed.push({ offset, change });
  }

  /**
   * An entry that was not held when a change to it was asked for, but that a refill read in
   * before the change's line (at `offset`) was on disk.
   */
  #missedThenRead(id: string, offset: number): OutboxEntry | undefined {
    const entry = this.entries.get(id);
    const read = entry === undefined ? undefined : this.#readUpTo.get(entry);
    if (read === undefined) return undefined;
    // `offset` is in the file of now: a compaction in between (which copied the entry from
    // memory, without this change) means the line came after what was read.
    return read.generation !== this.#generation || read.offset <= offset ? entry : undefined;
  }

  /** A held entry's line was found elsewhere in the file: it is read from there on. */
  relocate(entry: OutboxEntry, offset: number, length: number): void {
    if (this.entries.get(entry.id) === entry) this.#bytes += length - entry.length;
    entry.offset = offset;
    entry.length = length;
  }

  /** Whether the window runs low while submissions wait on disk. */
  wantsRefill(): boolean {
    return this.#scanFrom !== Infinity && this.#pending <= this.capacity / 2;
  }

  /** A refill starts reading the tail from {@linkcode scanFrom}. */
  refillStarted(): void {
    this.#refilling = true;
    this.#addedDuringRefill = Infinity;
  }

  /** The refill's scan ended: the tail's counters move on, and missed changes are applied. */
  refilled(scan: TailScan): void {
    this.#tailPending = scan.stopAt === undefined ? 0 : Math.max(0, this.#tailPending - scan.moved);
    this.#scanFrom = Math.min(scan.stopAt ?? Infinity, this.#addedDuringRefill);
    for (const { offset, change } of this.#missed) {
      const entry = this.#missedThenRead(change.id, offset);
      if (entry !== undefined) this.#apply(entry, change);
    }
    this.refillEnded();
  }

  /** The refill is over (its scan failed, or {@linkcode refilled} ran). */
  refillEnded(): void {
    this.#missed = [];
    this.#refilling = false;
  }

  /** The scan at start found this: where the tail starts and how many wait there. */
  started(scan: TailScan): void {
    if (scan.stopAt === undefined) return;
    this.#scanFrom = scan.stopAt;
    this.#tailPending = Math.max(0, scan.left);
  }

  /** Whether dead bytes are many enough, and outweigh the live ones, to rewrite the file. */
  worthCompacting(): boolean {
    const tailBytes = this.#scanFrom === Infinity ? 0 : this.#fileBytes - this.#scanFrom;
    const dead = this.#fileBytes - this.#bytes - tailBytes;
    return dead >= this.compactAfter && dead > this.#bytes + tailBytes;
  }

  /** A compaction wrote `layout` and the new file is in place. */
  compacted(layout: CompactedLayout): void {
    this.#generation++;
    for (const entry of layout.dropped) this.#forget(entry);
    this.#bytes = 0;
    for (const [entry, offset, length] of layout.moved) {
      entry.offset = offset;
      entry.length = length;
      this.#bytes += length;
    }
    if (this.#scanFrom !== Infinity) this.#scanFrom = layout.size;
    this.#fileBytes = layout.size + layout.tailSize;
  }

  /**
   * Folds a scan of the file's tail: moves pending entries it finds, not already held, into the
   * window until it holds `capacity`. At start (`atStart`) it also counts the pending ones it
   * leaves on disk, and holds every submission that lacks its backup record, however many (few:
   * those in flight at a crash), for recovery.
   */
  scan(atStart: boolean): TailFold {
    const fresh = new Map<string, OutboxEntry>();
    const unrecorded = new Map<string, OutboxEntry>();
    const damaged: Array<{ offset: number; length: number }> = [];
    let stopAt: number | undefined;
    let left = 0;
    return {
      line: (head, offset, length) => {
        if (head === undefined) return void damaged.push({ offset, length });
        const id = head.id as string;
        if (head.op === "add") {
          if (this.entries.has(id)) return;
          const entry = entryOf(head, offset, length);
          if (entry === undefined) return void damaged.push({ offset, length });
          // Pending ones count against the window (a delivered one waiting for its record is
          // let go as soon as it is written).
          if (stopAt === undefined && this.#pending + fresh.size < this.capacity) {
            fresh.set(id, entry);
            return;
          }
          stopAt ??= offset;
          if (!atStart) return;
          if (entry.done === false) left++;
          if (entry.status === undefined) unrecorded.set(id, entry);
          return;
        }
        const change = parseChange(head);
        if (change === undefined) return void damaged.push({ offset, length });
        const entry = fresh.get(id) ?? unrecorded.get(id);
        if (entry === undefined) {
          // Every line about a submission follows its add: read from the start, a `done` for
          // one not held is for one left on disk.
          if (atStart && change.op === "done" && !this.entries.has(id)) left--;
          return;
        }
        const wasPending = entry.done === false;
        applyOp(entry, change);
        if (finished(entry)) fresh.delete(id);
        // Left on disk and counted pending, now done: pending no more.
        if (wasPending && entry.done !== false && unrecorded.has(id)) left--;
        if (entry.status !== undefined) unrecorded.delete(id);
      },
      finish: (end) => {
        let moved = 0;
        for (const entry of fresh.values()) {
          // Pending ones join the window. At start so do delivered ones without their backup
          // record (recovery writes it); later those are new submissions whose sender is being
          // answered, which the callers' lane finishes.
          if (entry.done === false) moved++;
          else if (!atStart) continue;
          this.hold(entry);
          this.#readUpTo.set(entry, { generation: this.#generation, offset: end });
        }
        for (const entry of unrecorded.values()) {
          this.hold(entry);
          if (entry.done === false) left--;
        }
        return { moved, stopAt, left, damaged, end };
      },
    };
  }
}
