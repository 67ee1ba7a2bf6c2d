/**
 * The case pages' tables (issue 33): a case for each accepted submission, found by the SHA-256
 * hash of its token (the token itself is never kept), and its posts in order: the sender's
 * message and follow-ups, the owner's replies from the chat. A case is closed for writing while
 * its notification is marked Handled or Spam, or one of its follow-ups' is marked Spam (their
 * `chat_entries` states, read here, so the undo reopens it). Cases go at `RETENTION` (by the submission's time) or with their submission's
 * erasure, their posts with them.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** A new case: its submission, the token's hash and the sender's message (its first post). */
export interface CaseInsert {
  /** The submission's id. */
  readonly id: string;
  /** SHA-256 of the token (32 bytes). */
  readonly hash: Uint8Array;
  /** When the submission was received (its record's `ts`). */
  readonly ts: string;
  /** Its form's id; `null` for the default form. */
  readonly form: string | null;
  /** The sender's message. */
  readonly message: string;
}

/** One post of a case, as the page shows it. */
export interface CasePostRow {
  readonly ts: string;
  readonly author: "sender" | "owner";
  readonly text: string;
}

/** A case as read back. */
export interface CaseRow {
  readonly id: string;
  readonly hash: Uint8Array;
  readonly ts: string;
  readonly form: string | null;
  /**
   * Its notification's state (`open` while the chat ledger has none), `spam` too when one of its
   * follow-ups' notifications is marked Spam.
   */
  readonly state: "open" | "handled" | "spam";
  readonly posts: CasePostRow[];
}

/** A new post. */
export interface CasePostInsert {
  /** The case (its submission's id). */
  readonly caseId: string;
  /** What makes the post unique: a follow-up's submission id, a reply's `chat:message`. */
  readonly ref: string;
  readonly ts: string;
  readonly author: "sender" | "owner";
  readonly text: string;
}

/**
 * Why the database refused a sender's follow-up (`cases.followUp`): its case is gone (erased,
 * expired), or it waits for the owner's reply (lib/cases/waiting.ts). Carried as the error's
 * `reason`, which crosses the worker boundary (`errorShape` in lib/storage/sqlite/_protocol.ts).
 */
export type FollowUpRefusal = "case_gone" | "case_waiting";

/** A follow-up `cases.followUp` refused, and why. */
export class FollowUpRefused extends Error {
  /** Why. */
  readonly reason: FollowUpRefusal;

  constructor(reason: FollowUpRefusal) {
    super(reason === "case_gone" ? "the case is gone" : "the case waits for the owner's reply");
    this.name = "FollowUpRefused";
    this.reason = reason;
  }
}

function _caseOf(db: DatabaseSync, row: Record<string, unknown> | undefined): CaseRow | undefined {
  if (row === undefined) return undefined;
  const posts = prepared(
    db,
    "SELECT ts, author, text FROM case_posts WHERE case_id = ? ORDER BY seq",
  ).all(String(row.id)) as unknown as CasePostRow[];
  return {
    id: String(row.id),
    hash: new Uint8Array(row.hash as Uint8Array),
    ts: String(row.ts),
    form: row.form === null ? null : String(row.form),
    state: (row.state ?? "open") as CaseRow["state"],
    posts: posts.map((post) => ({ ...post })),
  };
}

// A case's state: its notification's, unless open and one of its follow-ups' notifications is
// marked Spam (abuse from the page closes the page, whatever address it comes from next).
const _select = `SELECT cases.id, cases.hash, cases.ts, cases.form,
  CASE WHEN coalesce(chat_entries.state, 'open') <> 'open' THEN chat_entries.state
    WHEN EXISTS (SELECT 1 FROM case_posts JOIN chat_entries AS follow_up
      ON follow_up.id = case_posts.ref
      WHERE case_posts.case_id = cases.id AND case_posts.ref <> cases.id
      AND follow_up.state = 'spam') THEN 'spam'
    ELSE 'open' END AS state
  FROM cases LEFT JOIN chat_entries ON chat_entries.id = cases.id`;

/** The cases' operations (lib/storage/sqlite/operations.ts). */
export const CASES_OPS = {
  /** Opens a case with its first post; `false` (nothing written) when its id is known already. */
  "cases.open"(db: DatabaseSync, row: CaseInsert): boolean {
    const { changes } = prepared(
      db,
      "INSERT INTO cases (id, hash, ts, form) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    ).run(row.id, row.hash, row.ts, row.form);
    if (Number(changes) !== 1) return false;
    prepared(
      db,
      "INSERT INTO case_posts (case_id, ref, ts, author, text) VALUES (?, ?, ?, 'sender', ?)",
    ).run(row.id, row.id, row.ts, row.message);
    return true;
  },
  /** The case whose token hashes to `hash`, with its posts; `undefined` when none. */
  "cases.byHash"(db: DatabaseSync, args: { hash: Uint8Array }): CaseRow | undefined {
    return _caseOf(db, prepared(db, `${_select} WHERE cases.hash = ?`).get(args.hash));
  },
  /** The case of submission `id`, with its posts; `undefined` when none. */
  "cases.get"(db: DatabaseSync, args: { id: string }): CaseRow | undefined {
    return _caseOf(db, prepared(db, `${_select} WHERE cases.id = ?`).get(args.id));
  },
  /**
   * Adds a post to a case; `false` (nothing written) when the case is gone or a post with the
   * same `ref` exists (a redelivered reply).
   */
  "cases.post"(db: DatabaseSync, row: CasePostInsert): boolean {
    const { changes } = prepared(
      db,
      `INSERT INTO case_posts (case_id, ref, ts, author, text)
        SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM cases WHERE id = ?)
        ON CONFLICT (ref) DO NOTHING`,
    ).run(row.caseId, row.ref, row.ts, row.author, row.text, row.caseId);
    return Number(changes) === 1;
  },
  /**
   * A sender's follow-up, in the transaction of its outbox row: throws
   * {@linkcode FollowUpRefused} (and so nothing of that transaction commits) when its case is
   * gone (erased, expired) or already holds `max` of the sender's posts in a row since the
   * owner's last reply (the one check of that cap that holds against racing posts; the page's
   * own is a cheap early one). A redelivered one (its `ref` posted before) changes nothing.
   */
  "cases.followUp"(db: DatabaseSync, row: CasePostInsert & { max: number }): void {
    if (prepared(db, "SELECT 1 FROM cases WHERE id = ?").get(row.caseId) === undefined) {
      throw new FollowUpRefused("case_gone");
    }
    const unanswered = Number(
      prepared(
        db,
        `SELECT count(*) AS n FROM case_posts WHERE case_id = ?1 AND author = 'sender' AND seq >
          coalesce((SELECT max(seq) FROM case_posts WHERE case_id = ?1 AND author = 'owner'), 0)
          AND ref <> ?2`,
      ).get(row.caseId, row.ref)?.n ?? 0,
    );
    if (unanswered >= row.max) throw new FollowUpRefused("case_waiting");
    CASES_OPS["cases.post"](db, row);
  },
  /** The case a follow-up (or any post) belongs to, by its `ref`; `undefined` when none. */
  "cases.ofPost"(db: DatabaseSync, args: { ref: string }): string | undefined {
    const row = prepared(db, "SELECT case_id FROM case_posts WHERE ref = ?").get(args.ref);
    return row === undefined ? undefined : String(row.case_id);
  },
  /** Removes the cases opened before `before` (retention), their posts with them; how many. */
  "cases.prune"(db: DatabaseSync, args: { before: string }): number {
    prepared(
      db,
      "DELETE FROM case_posts WHERE case_id IN (SELECT id FROM cases WHERE ts < ?)",
    ).run(args.before);
    return Number(prepared(db, "DELETE FROM cases WHERE ts < ?").run(args.before).changes);
  },
  /**
   * How many cases and posts erasure of these submissions removes: their cases (with every
   * post) and the follow-ups they are (a dry run of {@linkcode CASES_OPS["cases.forget"]}).
   */
  "cases.count"(db: DatabaseSync, args: { ids: readonly string[] }): number {
    const cases = prepared(db, "SELECT count(*) AS n FROM cases WHERE id = ?");
    const posts = prepared(
      db,
      "SELECT count(*) AS n FROM case_posts WHERE ref = ? AND ref <> case_id",
    );
    return args.ids.reduce(
      (sum, id) => sum + Number(cases.get(id)?.n ?? 0) + Number(posts.get(id)?.n ?? 0),
      0,
    );
  },
  /** Erases the cases of these submissions (every post) and the follow-ups they are; how many. */
  "cases.forget"(db: DatabaseSync, args: { ids: readonly string[] }): number {
    const posts = prepared(db, "DELETE FROM case_posts WHERE case_id = ?");
    const cases = prepared(db, "DELETE FROM cases WHERE id = ?");
    const followUps = prepared(db, "DELETE FROM case_posts WHERE ref = ?");
    let count = 0;
    for (const id of args.ids) {
      posts.run(id);
      count += Number(cases.run(id).changes) + Number(followUps.run(id).changes);
    }
    return count;
  },
} as const;
