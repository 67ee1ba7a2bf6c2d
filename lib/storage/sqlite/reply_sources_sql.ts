/**
 * What a reply by email needs of a submission, kept from its acceptance until `RETENTION` (or its
 * erasure), so the reply desk never reads the backup file: when it was received, its form, the
 * sender's contact, and (when the contact can be mailed) its message and subject field. Written
 * only while replies by email are on.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** A submission's reply data. */
export interface ReplySourceRow {
  /** The submission's id. */
  readonly id: string;
  /** When it was received (the backup record's `ts`). */
  readonly ts: string;
  /** Its form's id; `null` for the default form. */
  readonly form: string | null;
  /** The contact the sender left (`""` when none). */
  readonly contact: string;
  /** Its message, quoted below a reply; `null` when the contact is no email address. */
  readonly message: string | null;
  /** Its `subject` field, when its form had one and the sender filled it. */
  readonly subject: string | null;
}

/** The reply sources' operations (lib/storage/sqlite/operations.ts). */
export const REPLY_SOURCES_OPS = {
  /** Keeps a submission's reply data; an id already there is left as it is (a redo). */
  "replySources.add"(db: DatabaseSync, row: ReplySourceRow): void {
    prepared(
      db,
      `INSERT INTO reply_sources (id, ts, form, contact, message, subject)
        VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ).run(row.id, row.ts, row.form, row.contact, row.message, row.subject);
  },
  /** The reply data of submission `id`, or `undefined` (never kept, past retention, erased). */
  "replySources.get"(db: DatabaseSync, args: { id: string }): ReplySourceRow | undefined {
    const row = prepared(
      db,
      "SELECT id, ts, form, contact, message, subject FROM reply_sources WHERE id = ?",
    ).get(args.id);
    return row === undefined ? undefined : { ...row } as unknown as ReplySourceRow;
  },
  /** Removes the data of submissions received before `before` (retention); returns how many. */
  "replySources.prune"(db: DatabaseSync, args: { before: string }): number {
    return Number(
      prepared(db, "DELETE FROM reply_sources WHERE ts < ?").run(args.before).changes,
    );
  },
  /** How many of these submissions have reply data (a dry run of erasure). */
  "replySources.count"(db: DatabaseSync, args: { ids: readonly string[] }): number {
    const count = prepared(db, "SELECT count(*) AS n FROM reply_sources WHERE id = ?");
    return args.ids.reduce((sum, id) => sum + Number(count.get(id)?.n ?? 0), 0);
  },
  /** Removes the data of these submissions (erasure); returns how many. */
  "replySources.forget"(db: DatabaseSync, args: { ids: readonly string[] }): number {
    const remove = prepared(db, "DELETE FROM reply_sources WHERE id = ?");
    return args.ids.reduce((sum, id) => sum + Number(remove.run(id).changes), 0);
  },
} as const;
