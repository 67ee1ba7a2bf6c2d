/**
 * The replies' table: each reply the owner wrote in the chat to be emailed, from its acceptance
 * (with its draft: address, subject, text, quoted message) until it was sent or given up; then
 * only its audit stays (times, submission id, masked address, result, tries, reason), the draft
 * set to NULL in that same write (with `secure_delete`, its text is overwritten in the file).
 * Audits go at `RETENTION`. Erasure keeps an audit's times but nothing of the sender (no
 * submission id, no masked address, no reason), so `REPLY_LIMIT` still counts the reply.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** A new reply (lib/mail/reply_store.ts `NewReply`, its draft as JSON). */
export interface ReplyInsert {
  readonly id: string;
  readonly submission: string;
  readonly ts: string;
  readonly chat: number;
  readonly message: number;
  readonly topic?: number | undefined;
  /** The draft (lib/mail/message.ts `ReplyDraft`) as JSON. */
  readonly draft: string;
  /** The recipient, masked (`c•••@example.org`): what the audit keeps. */
  readonly masked: string;
  /** Imported from an older release's replies file: failed tries so far, and the last error. */
  readonly attempts?: number;
  readonly lastError?: string | null;
}

/** A reply waiting to be sent, as read back. */
export interface ReplyRow {
  readonly id: string;
  readonly submission: string;
  readonly ts: string;
  readonly chat: number;
  readonly message: number;
  readonly topic: number | null;
  readonly attempts: number;
  readonly lastError: string | null;
}

/** A waiting reply with its draft's JSON (the sender's; never `contactd pending`'s). */
export interface ReplyDraftRow extends ReplyRow {
  readonly draft: string;
}

/** A done reply's audit; `submission` and `masked` are `null` once its submission was erased. */
export interface ReplyAuditRow {
  readonly id: string;
  readonly submission: string | null;
  readonly ts: string;
  readonly masked: string | null;
  readonly result: "sent" | "given_up";
  readonly done: string;
  readonly attempts: number;
  readonly reason: string | null;
}

/** A done reply imported from an older release's replies file. */
export interface ReplyAuditInsert extends Omit<ReplyAuditRow, "masked" | "reason" | "submission"> {
  readonly submission: string;
  readonly masked: string;
  readonly reason?: string | null;
  readonly chat?: number;
  readonly message?: number;
}

const _waiting = "id, submission, ts, chat, message, topic, attempts, last_error AS lastError";

/** The replies' operations (lib/storage/sqlite/operations.ts). */
export const REPLIES_OPS = {
  /** Inserts a waiting reply; `false` (and nothing written) when its id is known already. */
  "replies.add"(db: DatabaseSync, row: ReplyInsert): boolean {
    const { changes } = prepared(
      db,
      `INSERT INTO replies (id, submission, ts, chat, message, topic, draft, masked, attempts,
        last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ).run(
      row.id,
      row.submission,
      row.ts,
      row.chat,
      row.message,
      row.topic ?? null,
      row.draft,
      row.masked,
      row.attempts ?? 0,
      row.lastError ?? null,
    );
    return Number(changes) === 1;
  },
  /** Inserts a done reply's audit (an import); `false` when its id is known already. */
  "replies.addAudit"(db: DatabaseSync, row: ReplyAuditInsert): boolean {
    const { changes } = prepared(
      db,
      `INSERT INTO replies (id, submission, ts, chat, message, masked, result, done, attempts,
        reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ).run(
      row.id,
      row.submission,
      row.ts,
      row.chat ?? 0,
      row.message ?? 0,
      row.masked,
      row.result,
      row.done,
      row.attempts,
      row.reason ?? null,
    );
    return Number(changes) === 1;
  },
  /** Notes a failed try of a waiting reply; `false` when it is not waiting (done, erased). */
  "replies.failed"(db: DatabaseSync, args: { id: string; error: string }): boolean {
    const { changes } = prepared(
      db,
      `UPDATE replies SET attempts = attempts + 1, last_error = ?
        WHERE id = ? AND result IS NULL`,
    ).run(args.error, args.id);
    return Number(changes) === 1;
  },
  /**
   * Notes that a waiting reply was sent (a last, successful try) or given up at `ts`; its draft
   * (text and address) and last error go at once. `false` when it was not waiting.
   */
  "replies.done"(
    db: DatabaseSync,
    args: { id: string; ts: string; result: "sent" | "given_up"; reason?: string | undefined },
  ): boolean {
    const { changes } = prepared(
      db,
      `UPDATE replies SET result = ?, done = ?, reason = ?, draft = NULL, last_error = NULL,
        attempts = attempts + ? WHERE id = ? AND result IS NULL`,
    ).run(args.result, args.ts, args.reason ?? null, args.result === "sent" ? 1 : 0, args.id);
    return Number(changes) === 1;
  },
  /** The waiting replies with their drafts, oldest first (the sender). */
  "replies.pending"(db: DatabaseSync): ReplyDraftRow[] {
    return prepared(
      db,
      `SELECT ${_waiting}, draft FROM replies WHERE result IS NULL ORDER BY ts, id`,
    ).all() as unknown as ReplyDraftRow[];
  },
  /** The waiting replies without their drafts, oldest first (`contactd pending`). */
  "replies.waiting"(db: DatabaseSync): ReplyRow[] {
    return prepared(
      db,
      `SELECT ${_waiting} FROM replies WHERE result IS NULL ORDER BY ts, id`,
    ).all() as unknown as ReplyRow[];
  },
  /** The done replies' audits, oldest first. */
  "replies.audits"(db: DatabaseSync): ReplyAuditRow[] {
    return prepared(
      db,
      `SELECT id, submission, ts, masked, result, done, attempts, reason FROM replies
        WHERE result IS NOT NULL ORDER BY ts, id`,
    ).all() as unknown as ReplyAuditRow[];
  },
  /** Removes the audits of replies done before `before` (retention); returns how many. */
  "replies.prune"(db: DatabaseSync, args: { before: string }): number {
    return Number(
      prepared(db, "DELETE FROM replies WHERE result IS NOT NULL AND done < ?").run(args.before)
        .changes,
    );
  },
  /** How many replies (waiting or done) belong to these submissions (a dry run of erasure). */
  "replies.count"(db: DatabaseSync, args: { submissions: readonly string[] }): number {
    const count = prepared(db, "SELECT count(*) AS n FROM replies WHERE submission = ?");
    return args.submissions.reduce((sum, id) => sum + Number(count.get(id)?.n ?? 0), 0);
  },
  /**
   * Erases what the replies to these submissions keep of their sender: a waiting one is given
   * up at `ts` (reason `erased`: never sent) and loses its draft; every one loses its
   * submission id, masked address, last error and reason. Their ids, times, results and tries
   * stay, so `REPLY_LIMIT` still counts them, until retention removes them. Returns how many.
   */
  "replies.forget"(
    db: DatabaseSync,
    args: { submissions: readonly string[]; ts: string },
  ): number {
    const erase = prepared(
      db,
      `UPDATE replies SET submission = NULL, masked = NULL, draft = NULL, last_error = NULL,
        topic = NULL, reason = CASE WHEN result IS NULL THEN 'erased' ELSE NULL END,
        result = coalesce(result, 'given_up'), done = coalesce(done, ?)
        WHERE submission = ?`,
    );
    let count = 0;
    for (const id of args.submissions) count += Number(erase.run(args.ts, id).changes);
    return count;
  },
} as const;
