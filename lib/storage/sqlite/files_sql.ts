/**
 * The files sent with submissions (`files`): what the backup record lists of each (label, size,
 * type, sha256), where it is kept (its name in `MESSAGES_FILE.files/`), and its way to the chat
 * (waiting, sent, or refused by Telegram). Kept from acceptance until `RETENTION` or erasure; a
 * submission the spam filter holds keeps its files too, which wait for the chat once released.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** One file of a submission, as accepted. */
export interface FileRow {
  /** The submission's id. */
  readonly submission: string;
  /** Its place among the submission's files, from 0. */
  readonly idx: number;
  /** When the submission was received (the record's `ts`). */
  readonly ts: string;
  /** Its form's id; `null` for the default form. */
  readonly form: string | null;
  /** The sender's file name, cleaned: a label. */
  readonly name: string;
  readonly size: number;
  /** Its media type, from its content. */
  readonly type: string;
  readonly sha256: string;
  /** Its name in `MESSAGES_FILE.files/`. */
  readonly stored: string;
  /**
   * Sent without a sound, as its notification is (marked as likely spam, lib/learn/classifier.ts
   * `looksLikeSpam`); absent: with one.
   */
  readonly silent?: boolean;
}

/** A file and how far it got to the chat. */
export interface FileState extends FileRow {
  readonly state: "waiting" | "sent" | "refused";
  /** The chat it went to, once sent or refused. */
  readonly chat: number | null;
  /** Its message in the chat, once sent. */
  readonly message: number | null;
  readonly attempts: number;
  /** Why Telegram refused it, or the last failure. */
  readonly error: string | null;
}

const COLUMNS = "submission, idx, ts, form, name, size, type, sha256, stored, state, chat, " +
  "message, attempts, error, silent";

/** A file whose submission the spam filter does not hold (lib/storage/sqlite/spam_sql.ts). */
const NOT_HELD = "NOT EXISTS (SELECT 1 FROM spam_held WHERE spam_held.id = files.submission)";

function rowOf(row: Record<string, unknown>): FileState {
  return {
    submission: String(row.submission),
    idx: Number(row.idx),
    ts: String(row.ts),
    form: row.form === null ? null : String(row.form),
    name: String(row.name),
    size: Number(row.size),
    type: String(row.type),
    sha256: String(row.sha256),
    stored: String(row.stored),
    state: String(row.state) as FileState["state"],
    chat: row.chat === null ? null : Number(row.chat),
    message: row.message === null ? null : Number(row.message),
    attempts: Number(row.attempts),
    error: row.error === null ? null : String(row.error),
    ...(Number(row.silent) === 1 ? { silent: true } : {}),
  };
}

/** The files' operations (lib/storage/sqlite/operations.ts). */
export const FILES_OPS = {
  /** Keeps a submission's files, waiting; a file already there is left as it is (a redo). */
  "files.add"(db: DatabaseSync, args: { files: readonly FileRow[] }): void {
    const insert = prepared(
      db,
      `INSERT INTO files (submission, idx, ts, form, name, size, type, sha256, stored, silent)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (submission, idx) DO NOTHING`,
    );
    for (const f of args.files) {
      const { submission, idx, ts, form, name, size, type, sha256, stored } = f;
      insert.run(submission, idx, ts, form, name, size, type, sha256, stored, f.silent ? 1 : 0);
    }
  },
  /** The files of submission `id`, in order. */
  "files.of"(db: DatabaseSync, args: { id: string }): FileState[] {
    return prepared(db, `SELECT ${COLUMNS} FROM files WHERE submission = ? ORDER BY idx`)
      .all(args.id).map(rowOf);
  },
  /**
   * At most `limit` files waiting for the chat, oldest first; not those of a submission the spam
   * filter holds (`spam_held`): they wait for its release.
   */
  "files.waiting"(db: DatabaseSync, args: { limit: number }): FileState[] {
    return prepared(
      db,
      `SELECT ${COLUMNS} FROM files WHERE state = 'waiting' AND ${NOT_HELD}
        ORDER BY ts, submission, idx LIMIT ?`,
    ).all(args.limit).map(rowOf);
  },
  /** How many files wait for the chat (not a held submission's). */
  "files.waitingCount"(db: DatabaseSync): number {
    return Number(
      prepared(db, `SELECT count(*) AS n FROM files WHERE state = 'waiting' AND ${NOT_HELD}`)
        .get()?.n ?? 0,
    );
  },
  /**
   * Notes a file sent to `chat` as `message`, or refused there with `error` (`chat` `null`: given
   * up before it had one).
   */
  "files.settled"(
    db: DatabaseSync,
    args: {
      submission: string;
      idx: number;
      state: "sent" | "refused";
      chat: number | null;
      message: number | null;
      error: string | null;
    },
  ): void {
    prepared(
      db,
      `UPDATE files SET state = ?, chat = ?, message = ?, error = ?, attempts = attempts + 1
        WHERE submission = ? AND idx = ?`,
    ).run(args.state, args.chat, args.message, args.error, args.submission, args.idx);
  },
  /** Notes a failed attempt (it stays waiting). */
  "files.failed"(db: DatabaseSync, args: { submission: string; idx: number; error: string }): void {
    prepared(
      db,
      "UPDATE files SET attempts = attempts + 1, error = ? WHERE submission = ? AND idx = ?",
    ).run(args.error, args.submission, args.idx);
  },
  /**
   * Removes the rows of submissions received before `before` (retention) and returns them (their
   * stored files and messages are the caller's to remove).
   */
  "files.prune"(db: DatabaseSync, args: { before: string }): FileState[] {
    const rows = prepared(db, `SELECT ${COLUMNS} FROM files WHERE ts < ?`).all(args.before)
      .map(rowOf);
    prepared(db, "DELETE FROM files WHERE ts < ?").run(args.before);
    return rows;
  },
  /** The files of these submissions (a dry run of erasure). */
  "files.list"(db: DatabaseSync, args: { ids: readonly string[] }): FileState[] {
    const select = prepared(db, `SELECT ${COLUMNS} FROM files WHERE submission = ? ORDER BY idx`);
    return args.ids.flatMap((id) => select.all(id).map(rowOf));
  },
  /** Removes the rows of these submissions (erasure) and returns them. */
  "files.forget"(db: DatabaseSync, args: { ids: readonly string[] }): FileState[] {
    const select = prepared(db, `SELECT ${COLUMNS} FROM files WHERE submission = ? ORDER BY idx`);
    const remove = prepared(db, "DELETE FROM files WHERE submission = ?");
    return args.ids.flatMap((id) => {
      const rows = select.all(id).map(rowOf);
      remove.run(id);
      return rows;
    });
  },
  /** Every stored name the table knows (to find files on disk nothing refers to). */
  "files.storedNames"(db: DatabaseSync): string[] {
    return prepared(db, "SELECT stored FROM files").all().map((row) => String(row.stored));
  },
} as const;
