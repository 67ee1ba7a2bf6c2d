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
  /** Commits a new submission; rejects if it is not in the database. */
  add(submission: OutboxSubmission): Promise<void>;
  /** Notes that its backup record is written and what the sender was answered. */
  recorded(id: string, status: number | null): Promise<void>;
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
}

/** Opens the outbox kept in `store` and reads its window. */
export async function openOutbox(store: Store, options: OutboxOptions = {}): Promise<Outbox> {
  const outbox = new _StoreOutbox(store, options.window ?? OUTBOX_WINDOW, options.alsoOnAdd);
  await outbox.load();
  return outbox;
}

/** The submission's text as the `outbox` table keeps it (JSON, the id and time apart). */
export function submissionText(submission: OutboxSubmission): string {
  const { name, contact, message, ip, contactFrom, fields } = submission;
  return JSON.stringify({
    name,
    contact,
    message,
    ip,
    ...(contactFrom === undefined ? {} : { contact_from: contactFrom }),
    ...(fields === undefined ? {} : { fields }),
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
  const { name, contact, message, ip, contact_from, fields } = value as Record<string, unknown>;
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

  constructor(store: Store, capacity: number, alsoOnAdd: OutboxOptions["alsoOnAdd"]) {
    this.#store = store;
    this.#capacity = capacity;
    this.#alsoOnAdd = alsoOnAdd;
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

  async add(submission: OutboxSubmission): Promise<void> {
    const [seq] = await this.#store.transaction([
      call("outbox.add", {
        id: submission.id,
        ts: submission.ts,
        form: submission.form,
        submission: submissionText(submission),
      }),
      ...this.#alsoOnAdd?.(submission) ?? [],
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

  async failed(id: string, ts: string, error: string): Promise<void> {
    await this.#store.run("outbox.failed", { id, ts, error });
    this.#apply(id, { op: "failed", id, ts, error });
  }

  async done(id: string, ts: string, result: "delivered" | "given_up"): Promise<void> {
    // The count falls only when a waiting row (in the window or beyond it) was ended now.
    if (await this.#store.run("outbox.done", { id, result })) {
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
    this.#pending = await this.#store.run("outbox.waiting", undefined);
    if (removed > 0 && !this.#complete) await this.#refill();
  }

  compact(): Promise<void> {
    return this.#store.checkpoint();
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
      if (!this.#entries.has(row.id)) this.#entries.set(row.id, entryOfRow(row));
      this.#lastSeq = Math.max(this.#lastSeq, row.seq);
    }
    this.#complete = rows.length < room;
  }
}
