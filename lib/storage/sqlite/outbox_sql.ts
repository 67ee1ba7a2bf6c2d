/**
 * The outbox's table: a submission from the moment it is accepted until it has reached the chat
 * (or was given up) and its backup record is written; then its row goes (deleted with
 * `secure_delete`, so its text does not stay in the file).
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** A row's state, as the queue and `contactd pending` read it (never the sender's text). */
export interface OutboxRow {
  readonly seq: number;
  readonly id: string;
  readonly ts: string;
  readonly form: string | null;
  /** 1 once the backup record is written. */
  readonly recorded: number;
  /** What the sender was answered (`null`: no answer could be given, or not yet recorded). */
  readonly status: number | null;
  readonly attempts: number;
  readonly firstError: string | null;
  readonly lastError: string | null;
  readonly lastTs: string | null;
  readonly done: "delivered" | "given_up" | null;
}

/** A new row: the submission's id, time and form, and its text as JSON. */
export interface OutboxInsert {
  readonly id: string;
  readonly ts: string;
  readonly form?: string | undefined;
  /** The submission (lib/storage/outbox.ts `OutboxSubmission`) as JSON. */
  readonly submission: string;
  /** Imported from an older release's outbox: its state so far. */
  readonly attempts?: number;
  readonly firstError?: string | null;
  readonly lastError?: string | null;
  readonly lastTs?: string | null;
  readonly recorded?: boolean;
  readonly status?: number | null;
  readonly done?: "delivered" | "given_up" | null;
}

const _columns = "seq, id, ts, form, recorded, status, attempts, first_error AS firstError, " +
  "last_error AS lastError, last_ts AS lastTs, done";

/** The outbox's operations (lib/storage/sqlite/operations.ts). */
export const OUTBOX_OPS = {
  /**
   * Inserts a submission; returns its place in the order (`seq`), or `undefined` when the id is
   * there already (an import redone), which is left as it is.
   */
  "outbox.add"(db: DatabaseSync, row: OutboxInsert): number | undefined {
    const result = prepared(
      db,
      `INSERT INTO outbox (id, ts, form, submission, attempts, first_error, last_error, last_ts,
        recorded, status, done) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO NOTHING`,
    ).run(
      row.id,
      row.ts,
      row.form ?? null,
      row.submission,
      row.attempts ?? 0,
      row.firstError ?? null,
      row.lastError ?? null,
      row.lastTs ?? null,
      row.recorded === true ? 1 : 0,
      row.status ?? null,
      row.done ?? null,
    );
    return Number(result.changes) === 0 ? undefined : Number(result.lastInsertRowid);
  },
  /** Notes that the backup record is written and what the sender was answered. */
  "outbox.recorded"(db: DatabaseSync, args: { id: string; status: number | null }): void {
    prepared(db, "UPDATE outbox SET recorded = 1, status = ? WHERE id = ?").run(
      args.status,
      args.id,
    );
    _dropFinished(db, args.id);
  },
  /** Notes a failed delivery attempt. */
  "outbox.failed"(db: DatabaseSync, args: { id: string; ts: string; error: string }): void {
    prepared(
      db,
      `UPDATE outbox SET attempts = attempts + 1, first_error = coalesce(first_error, ?),
        last_error = ?, last_ts = ? WHERE id = ?`,
    ).run(args.error, args.error, args.ts, args.id);
  },
  /** Notes that it reached the chat or was given up; true when it was waiting until now. */
  "outbox.done"(
    db: DatabaseSync,
    args: { id: string; result: "delivered" | "given_up" },
  ): boolean {
    const changed = prepared(db, "UPDATE outbox SET done = ? WHERE id = ? AND done IS NULL")
      .run(args.result, args.id).changes;
    _dropFinished(db, args.id);
    return Number(changed) > 0;
  },

  /** The submission's JSON text, or `undefined` when its row is gone. */
  "outbox.read"(db: DatabaseSync, args: { id: string }): string | undefined {
    const row = prepared(db, "SELECT submission FROM outbox WHERE id = ?").get(args.id);
    return row === undefined ? undefined : String(row.submission);
  },
  /**
   * Rows after `afterSeq` that are waiting (not done) or lack their backup record, oldest first,
   * at most `limit`.
   */
  "outbox.window"(db: DatabaseSync, args: { afterSeq: number; limit: number }): OutboxRow[] {
    return prepared(
      db,
      `SELECT ${_columns} FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?`,
    ).all(args.afterSeq, args.limit) as unknown as OutboxRow[];
  },
  /** How many submissions wait for delivery. */
  "outbox.waiting"(db: DatabaseSync): number {
    return Number(
      prepared(db, "SELECT count(*) AS n FROM outbox WHERE done IS NULL").get()?.n ?? 0,
    );
  },
  /** Rows whose backup record was never written, with their text (recovery at start). */
  "outbox.unrecorded"(db: DatabaseSync): Array<OutboxRow & { submission: string }> {
    return prepared(
      db,
      `SELECT ${_columns}, submission FROM outbox WHERE recorded = 0 ORDER BY seq`,
    ).all() as unknown as Array<OutboxRow & { submission: string }>;
  },
  /** Waiting rows with their text, oldest first (`contactd pending`, erasure's matching). */
  "outbox.texts"(
    db: DatabaseSync,
    args: { afterSeq: number; limit: number },
  ): Array<OutboxRow & { submission: string }> {
    return prepared(
      db,
      `SELECT ${_columns}, submission FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?`,
    ).all(args.afterSeq, args.limit) as unknown as Array<OutboxRow & { submission: string }>;
  },
  /** Removes the rows of `ids` (erasure); returns how many there were. */
  "outbox.forget"(db: DatabaseSync, args: { ids: readonly string[] }): number {
    let count = 0;
    const remove = prepared(db, "DELETE FROM outbox WHERE id = ?");
    for (const id of args.ids) count += Number(remove.run(id).changes);
    return count;
  },
} as const;

/** A row delivered (or given up) whose record is written is needed no more. */
function _dropFinished(db: DatabaseSync, id: string): void {
  prepared(db, "DELETE FROM outbox WHERE id = ? AND recorded = 1 AND done IS NOT NULL").run(id);
}
