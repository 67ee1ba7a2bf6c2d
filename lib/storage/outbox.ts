/**
 * The outbox of a running service: every validated submission, committed to the database
 * (lib/storage/store.ts, table `outbox`) before delivery starts, until it has reached the chat
 * (or is given up) and its backup record is written; then its row is deleted.
 *
 * Memory holds a bounded window: the oldest rows (their ids, times and delivery state, never
 * their text), at most {@linkcode OUTBOX_WINDOW}; the rest of a long backlog stays in the
 * database and is read into the window as it drains, oldest first. A row's state in memory
 * follows the same rule as the old file format's (lib/storage/outbox_lines.ts `applyOp`), and the
 * database's (lib/storage/sqlite/outbox_sql.ts), each change written before memory takes it.
 *
 * @module
 */
import { applyOp, finished, type OutboxEntry, type OutboxSubmission } from "./outbox_lines.ts";
import type { OutboxRow } from "./sqlite/outbox_sql.ts";
import { call, type OpResult, type Store, type StoreCall } from "./store.ts";

export type { OutboxEntry, OutboxSubmission } from "./outbox_lines.ts";

/** How many rows an outbox holds in memory by default (the rest wait in the database). */
export const OUTBOX_WINDOW = 1024;

/** The outbox of a running service. */
export interface Outbox {
  /**
   * The window, oldest first: waiting entries and entries whose backup record is not written.
   * Do not change them.
   */
  entries(): IterableIterator<OutboxEntry>;
  /** The entry of `id`, if the window holds it. */
  get(id: string): OutboxEntry | undefined;
  /** Submissions not yet delivered nor given up, in the window and beyond it. */
  readonly pendingCount: number;
  /**
   * Commits a new submission, with `also` (what else must be written with it, in the same
   * transaction: its case, its spam lesson, a held row's removal); rejects if it is not in the
   * database.
   */
  add(submission: OutboxSubmission, also?: readonly StoreCall[]): Promise<void>;
  /** Notes that its backup record is written and what the sender was answered. */
  recorded(id: string, status: number | null): Promise<void>;
  /**
   * {@linkcode Outbox.recorded}, committed with the next change the outbox commits (or at the
   * latest after {@linkcode OutboxOptions.markDelayMs}, or at {@linkcode Outbox.close}): memory
   * takes it at once. Resolves once committed. A crash before the commit loses only the note:
   * recovery finds the record in the backup file and marks the row (lib/storage/recovery.ts).
   */
  recordedSoon(id: string, status: number | null): Promise<void>;
  /** Notes a failed delivery attempt. */
  failed(id: string, ts: string, error: string): Promise<void>;
  /**
   * Notes that it reached the chat or was given up; it is pending no more at once. Once the
   * window runs low, the next waiting rows are read into it before this resolves.
   */
  done(id: string, ts: string, result: "delivered" | "given_up"): Promise<void>;
  /**
   * The submission's text. Rejects with {@linkcode OutboxEntryDamaged} when its row is gone (it
   * was erased) or cannot be read as a submission; any other rejection is an I/O error.
   */
  read(id: string): Promise<OutboxSubmission>;
  /** Every waiting submission with its text, the window's and beyond it, oldest first. */
  waiting(): AsyncIterable<OutboxSubmission>;
  /**
   * Deletes the rows of `ids` outright, in the window and beyond it (erasure): their text is gone
   * from the tables at once (from the file with the next {@linkcode Outbox.compact}).
   */
  forget(ids: Iterable<string>): Promise<void>;
  /**
   * Makes deletions final on disk: the write-ahead log is emptied into the database file, whose
   * deleted rows `secure_delete` has overwritten (after an erasure or a retention run).
   */
  compact(): Promise<void>;
  /**
   * Commits the notes {@linkcode Outbox.recordedSoon} holds now (an erasure first: a row that
   * memory counts finished is then finished in the database too, and deleted). Rejects when they
   * could not be committed (they are kept for the next try).
   */
  flush(): Promise<void>;
  /** Commits the notes {@linkcode Outbox.recordedSoon} still holds; none are taken after. */
  close(): Promise<void>;
}

/** An entry's text cannot be read back (its row is gone or damaged). */
export class OutboxEntryDamaged extends Error {
  /** The submission's id. */
  readonly id: string;

  constructor(id: string) {
    super(`outbox entry ${id} is damaged: its text cannot be read back`);
    this.name = "OutboxEntryDamaged";
    this.id = id;
  }
}

/** Options of {@linkcode openOutbox}. */
export interface OutboxOptions {
  /** How many rows memory holds at most (the rest wait in the database); default 1024. */
  readonly window?: number;
  /**
   * What else is written with a new submission, in the same transaction (what replies by email
   * keep of it, lib/mail/reply_sources.ts).
   */
  readonly alsoOnAdd?: (submission: OutboxSubmission) => readonly StoreCall[];
  /**
   * How long a note of {@linkcode Outbox.recordedSoon} waits for another change to be committed
   * with before it is committed alone; default 1000 ms.
   */
  readonly markDelayMs?: number;
  /** Calls `fn` once after `ms`; returns the cancel (default: an unref'd `setTimeout`). */
  readonly later?: (fn: () => void, ms: number) => () => void;
}

/** How long a note waits for another change to share its commit, by default. */
export const MARK_DELAY_MS = 1000;

/** Opens the outbox kept in `store` and reads its window. */
export async function openOutbox(store: Store, options: OutboxOptions = {}): Promise<Outbox> {
  const outbox = new _StoreOutbox(store, options);
  await outbox.load();
  return outbox;
}

/** The submission's text as the `outbox` table keeps it (JSON, the id and time apart). */
export function submissionText(submission: OutboxSubmission): string {
  const { name, contact, message, ip, contactFrom, fields, spamScore, followUp } = submission;
  return JSON.stringify({
    name,
    contact,
    message,
    ip,
    ...(contactFrom === undefined ? {} : { contact_from: contactFrom }),
    ...(fields === undefined ? {} : { fields }),
    ...(spamScore === undefined ? {} : { spam_score: spamScore }),
    ...(followUp === undefined ? {} : { follow_up: followUp }),
  });
}

/** The submission of a row's `id`, `ts`, `form` and text; `undefined` when the text is no one. */
export function submissionOf(
  row: { readonly id: string; readonly ts: string; readonly form: string | null },
  text: string,
): OutboxSubmission | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { name, contact, message, ip, contact_from, fields, spam_score, follow_up } =
    value as Record<
      string,
      unknown
    >;
  if (![name, contact, message, ip].every((field) => typeof field === "string")) return undefined;
  return {
    id: row.id,
    ts: row.ts,
    name: name as string,
    contact: contact as string,
    message: message as string,
    ip: ip as string,
    ...(typeof contact_from === "string" ? { contactFrom: contact_from } : {}),
    ...(typeof fields === "object" && fields !== null
      ? { fields: fields as Record<string, string> }
      : {}),
    ...(typeof spam_score === "number" ? { spamScore: spam_score } : {}),
    ...(typeof follow_up === "string" ? { followUp: follow_up } : {}),
    ...(row.form === null ? {} : { form: row.form }),
  };
}

/** The entry a row stands for. */
export function entryOfRow(row: OutboxRow): OutboxEntry {
  return {
    id: row.id,
    ts: row.ts,
    attempts: row.attempts,
    firstError: row.firstError,
    lastError: row.lastError,
    lastTs: row.lastTs,
    status: row.recorded === 1 ? row.status : undefined,
    done: row.done ?? false,
    offset: 0,
    length: 0,
    ...(row.form === null ? {} : { form: row.form }),
  };
}

class _StoreOutbox implements Outbox {
  readonly #store: Store;
  readonly #capacity: number;
  readonly #entries = new Map<string, OutboxEntry>();
  /** The `seq` of the last row the window read or took. */
  #lastSeq = 0;
  /** Every row after `#lastSeq` is in the window (none waits beyond it). */
  #complete = false;
  #pending = 0;
  /** A refill under way. */
  #refilling: Promise<void> | undefined;

  readonly #alsoOnAdd: OutboxOptions["alsoOnAdd"];
  /** Notes of recordedSoon not yet committed, by id. */
  readonly #marks = new _Marks();
  readonly #markDelayMs: number;
  readonly #later: (fn: () => void, ms: number) => () => void;
  #cancelFlush: (() => void) | undefined;
  #closed = false;

  constructor(store: Store, options: OutboxOptions) {
    this.#store = store;
    this.#capacity = options.window ?? OUTBOX_WINDOW;
    this.#alsoOnAdd = options.alsoOnAdd;
    this.#markDelayMs = options.markDelayMs ?? MARK_DELAY_MS;
    this.#later = options.later ?? _unrefLater;
  }

  get pendingCount(): number {
    return this.#pending;
  }

  async load(): Promise<void> {
    this.#pending = await this.#store.run("outbox.waiting", undefined);
    await this.#refill();
  }

  entries(): IterableIterator<OutboxEntry> {
    return this.#entries.values();
  }

  get(id: string): OutboxEntry | undefined {
    return this.#entries.get(id);
  }

  async add(submission: OutboxSubmission, also: readonly StoreCall[] = []): Promise<void> {
    const [seq] = await this.#commit([
      call("outbox.add", {
        id: submission.id,
        ts: submission.ts,
        form: submission.form,
        submission: submissionText(submission),
      }),
      ...this.#alsoOnAdd?.(submission) ?? [],
      ...also,
    ]) as [OpResult<"outbox.add">];
    if (seq === undefined) throw new Error(`outbox already holds ${submission.id}`);
    this.#pending++;
    if (this.#complete && this.#entries.size < this.#capacity && seq > this.#lastSeq) {
      this.#entries.set(
        submission.id,
        entryOfRow({
          seq,
          id: submission.id,
          ts: submission.ts,
          form: submission.form ?? null,
          recorded: 0,
          status: null,
          attempts: 0,
          firstError: null,
          lastError: null,
          lastTs: null,
          done: null,
        }),
      );
      this.#lastSeq = seq;
    } else {
      this.#complete = false;
    }
  }

  async recorded(id: string, status: number | null): Promise<void> {
    await this.#store.run("outbox.recorded", { id, status });
    this.#apply(id, { op: "recorded", id, status });
  }

  recordedSoon(id: string, status: number | null): Promise<void> {
    if (this.#closed) return this.recorded(id, status);
    this.#apply(id, { op: "recorded", id, status });
    const committed = this.#marks.add(id, status);
    this.#scheduleFlush();
    return committed;
  }

  #scheduleFlush(): void {
    if (this.#closed) return;
    this.#cancelFlush ??= this.#later(() => {
      this.#cancelFlush = undefined;
      this.flush().catch(() => {}); // each waiting note's promise has its error
    }, this.#markDelayMs);
  }

  async flush(): Promise<void> {
    const marks = this.#marks.take();
    if (marks.calls.length === 0) return;
    try {
      await this.#store.transaction(marks.calls);
      marks.settle(undefined);
    } catch (error) {
      // Those waiting are told; the notes themselves are kept, to be committed with the next.
      marks.settle(error);
      if (!this.#closed) {
        this.#marks.restore({
          ...marks,
          taken: marks.taken.map(([id, held]) => [id, { ...held, settle: [] }]),
        });
        this.#scheduleFlush();
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelFlush?.();
    this.#cancelFlush = undefined;
    await this.flush().catch(() => {}); // each waiting note's promise has its error
  }

  async failed(id: string, ts: string, error: string): Promise<void> {
    await this.#commit([call("outbox.failed", { id, ts, error })]);
    this.#apply(id, { op: "failed", id, ts, error });
  }

  async done(id: string, ts: string, result: "delivered" | "given_up"): Promise<void> {
    // The count falls only when a waiting row (in the window or beyond it) was ended now.
    const [ended] = await this.#commit([call("outbox.done", { id, result })]);
    if (ended === true) {
      this.#pending = Math.max(0, this.#pending - 1);
    }
    this.#apply(id, { op: "done", id, ts, result });
    if (!this.#complete && this.#entries.size < this.#capacity / 2) {
      this.#refilling ??= this.#refill().finally(() => this.#refilling = undefined);
      await this.#refilling;
    }
  }

  async read(id: string): Promise<OutboxSubmission> {
    const entry = this.#entries.get(id);
    const text = await this.#store.run("outbox.read", { id });
    const submission = text === undefined ? undefined : submissionOf(
      { id, ts: entry?.ts ?? "", form: entry?.form ?? null },
      text,
    );
    if (submission === undefined) throw new OutboxEntryDamaged(id);
    return submission;
  }

  async *waiting(): AsyncIterable<OutboxSubmission> {
    let afterSeq = 0;
    for (;;) {
      const rows = await this.#store.run("outbox.texts", { afterSeq, limit: 256 });
      for (const row of rows) {
        const submission = row.done === null ? submissionOf(row, row.submission) : undefined;
        if (submission !== undefined) yield submission;
      }
      if (rows.length < 256) return;
      afterSeq = rows[rows.length - 1]!.seq;
    }
  }

  async forget(ids: Iterable<string>): Promise<void> {
    const all = [...ids];
    if (all.length === 0) return;
    const removed = await this.#store.run("outbox.forget", { ids: all });
    for (const id of all) this.#entries.delete(id);
    this.#marks.drop(all);
    this.#pending = await this.#store.run("outbox.waiting", undefined);
    if (removed > 0 && !this.#complete) await this.#refill();
  }

  compact(): Promise<void> {
    return this.#store.checkpoint();
  }

  /** Commits `calls` with the notes waiting, in one transaction; their results, in order. */
  async #commit(calls: readonly StoreCall[]): Promise<unknown[]> {
    const marks = this.#marks.take();
    if (marks.calls.length === 0) return await this.#store.transaction(calls);
    try {
      const results = await this.#store.transaction([...calls, ...marks.calls]);
      marks.settle(undefined);
      return results.slice(0, calls.length);
    } catch (error) {
      // The change's own failure: the notes wait for the next commit (or their flush); once
      // closed, none comes, and those waiting are told.
      if (this.#closed) marks.settle(error);
      else {
        this.#marks.restore(marks);
        this.#scheduleFlush();
      }
      throw error;
    }
  }

  #apply(id: string, change: Parameters<typeof applyOp>[1]): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    applyOp(entry, change);
    if (finished(entry)) this.#entries.delete(id);
  }

  /** Reads the next rows after the window's last into it, up to its capacity. */
  async #refill(): Promise<void> {
    const room = this.#capacity - this.#entries.size;
    if (room <= 0) return;
    const rows = await this.#store.run("outbox.window", { afterSeq: this.#lastSeq, limit: room });
    for (const row of rows) {
      this.#lastSeq = Math.max(this.#lastSeq, row.seq);
      if (this.#entries.has(row.id)) continue;
      const entry = entryOfRow(row);
      // Noted recorded in memory, its commit still waiting: the row is behind memory.
      const status = this.#marks.status(row.id);
      if (status !== undefined) applyOp(entry, { op: "recorded", id: row.id, status });
      if (!finished(entry)) this.#entries.set(row.id, entry);
    }
    this.#complete = rows.length < room;
  }
}

/** Notes of `recordedSoon` waiting for a commit, and who waits for each. */
class _Marks {
  readonly #waiting = new Map<string, { status: number | null; settle: _Settle[] }>();

  /** Holds a note; resolves (or rejects) with the commit that takes it. */
  add(id: string, status: number | null): Promise<void> {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    const held = this.#waiting.get(id);
    const settle = (error: unknown) => error === undefined ? resolve() : reject(error);
    if (held === undefined) this.#waiting.set(id, { status, settle: [settle] });
    else {
      held.status = status;
      held.settle.push(settle);
    }
    return promise;
  }

  /** The status a held note gives `id`; `undefined` when none is held. */
  status(id: string): number | null | undefined {
    return this.#waiting.get(id)?.status;
  }

  /** Forgets the notes of erased rows (their rows are gone): settled as committed. */
  drop(ids: readonly string[]): void {
    for (const id of ids) {
      for (const settle of this.#waiting.get(id)?.settle ?? []) settle(undefined);
      this.#waiting.delete(id);
    }
  }

  /** Takes every held note: the calls that commit them, and what to do with the outcome. */
  take(): _Taken {
    const taken = [...this.#waiting];
    this.#waiting.clear();
    return {
      taken,
      calls: taken.map(([id, { status }]) => call("outbox.recorded", { id, status })),
      settle: (error) => {
        for (const [, held] of taken) for (const settle of held.settle) settle(error);
      },
    };
  }

  /** Holds again the notes `take` took whose commit failed (newer notes of an id win). */
  restore(marks: _Taken): void {
    for (const [id, held] of marks.taken) {
      const newer = this.#waiting.get(id);
      if (newer === undefined) this.#waiting.set(id, held);
      else newer.settle.push(...held.settle);
    }
  }
}

interface _Taken {
  readonly taken: ReadonlyArray<[string, { status: number | null; settle: _Settle[] }]>;
  readonly calls: StoreCall[];
  readonly settle: _Settle;
}

type _Settle = (error: unknown) => void;

function _unrefLater(fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, ms);
  Deno.unrefTimer(timer);
  return () => clearTimeout(timer);
}
