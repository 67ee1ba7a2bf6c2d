/**
 * The learned spam filter's tables (`spam_tokens`, `spam_totals`, `spam_lessons`): the token
 * counts the owner's presses taught, the examples' totals, and per submission what it would
 * teach (its distinct tokens) and what it taught (its label), kept until `RETENTION` or its
 * erasure so that undoing a press and `contactd forget` subtract exactly that. The scoring rules
 * are lib/learn/classifier.ts's; these operations keep the rows and do the counting, so the
 * service and a command (`contactd train`) can both change them.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** A label a press teaches. */
export type SpamLabelRow = "spam" | "ham";

/** One token's row: `[token, spam, ham, seen]`; `spam` and `ham` both 0: the row is gone. */
export type SpamTokenRow = [token: string, spam: number, ham: number, seen: number];

/** The examples' totals. */
export interface SpamTotalsRow {
  spam: number;
  ham: number;
}

/** What a change to the counts left: the rows of the tokens it touched, and the totals. */
export interface SpamChange {
  readonly rows: SpamTokenRow[];
  readonly totals: SpamTotalsRow;
}

/** A submission's lesson: what it would teach, and when it was received (for retention). */
export interface SpamLessonRow {
  readonly submission: string;
  /** When it was received (the backup record's `ts`). */
  readonly ts: string;
  /** Its tokens (lib/learn/features.ts), each counted once. */
  readonly tokens: readonly string[];
}

/** A submission held by the filter (`SPAM_FILTER=hold`). */
export interface SpamHeldRow {
  readonly id: string;
  readonly ts: string;
  /** Its form's id; `null` for the default form. */
  readonly form: string | null;
  readonly score: number;
  /** The submission as the outbox keeps it (lib/storage/outbox.ts `submissionText`). */
  readonly submission: string;
}

/** The whole model, as the service loads it. */
export interface SpamModelRows {
  readonly tokens: SpamTokenRow[];
  readonly totals: SpamTotalsRow;
}

/** The `spam_*` tables' operations (lib/storage/sqlite/operations.ts). */
export const SPAM_OPS = {
  /** Every token row and the totals. */
  "spam.model"(db: DatabaseSync): SpamModelRows {
    const tokens = prepared(db, "SELECT token, spam, ham, seen FROM spam_tokens").all()
      .map((row) =>
        [String(row.token), Number(row.spam), Number(row.ham), Number(row.seen)] as SpamTokenRow
      );
    return { tokens, totals: _totals(db) };
  },
  /** Keeps what a submission would teach; one already kept stays as it is (a redo). */
  "spam.keep"(db: DatabaseSync, lesson: SpamLessonRow): void {
    prepared(
      db,
      `INSERT INTO spam_lessons (submission, ts, label, tokens) VALUES (?, ?, NULL, ?)
        ON CONFLICT (submission) DO NOTHING`,
    ).run(lesson.submission, lesson.ts, JSON.stringify([...new Set(lesson.tokens)]));
  },
  /**
   * Sets what submission `submission` teaches to `label` (`null`: nothing, an undone press),
   * dating its tokens by the day it was received (`day`, days since the epoch, at the latest):
   * subtracts what it taught before, adds the new label's counts.
   * Returns the change, `undefined` when its lesson is not kept (never, past retention, erased)
   * or already says `label`.
   */
  "spam.teach"(
    db: DatabaseSync,
    args: { submission: string; label: SpamLabelRow | null; day: number },
  ): SpamChange | undefined {
    return _teach(db, args.submission, args.label, args.day);
  },
  /**
   * `contactd train`: keeps each example as a lesson (its `submission` a record's id, or a name
   * of the command's) and teaches its label, as a press would, but only to a lesson that has
   * none yet: what the owner pressed (or an earlier training taught) wins. Returns how many
   * changed the model.
   */
  "spam.train"(
    db: DatabaseSync,
    args: { examples: readonly (SpamLessonRow & { label: SpamLabelRow })[]; day: number },
  ): number {
    let taught = 0;
    const labelled = prepared(
      db,
      "SELECT 1 FROM spam_lessons WHERE submission = ? AND label IS NOT NULL",
    );
    for (const example of args.examples) {
      if (labelled.get(example.submission) !== undefined) continue;
      SPAM_OPS["spam.keep"](db, example);
      if (_teach(db, example.submission, example.label, args.day) !== undefined) taught++;
    }
    return taught;
  },
  /** Keeps a submission held out of the chat; one already kept stays as it is (a redo). */
  "spam.hold"(db: DatabaseSync, row: SpamHeldRow): void {
    prepared(
      db,
      `INSERT INTO spam_held (id, ts, form, score, submission) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (id) DO NOTHING`,
    ).run(row.id, row.ts, row.form, row.score, row.submission);
  },
  /** The held submissions (without their text), newest first, at most `limit`, and how many. */
  "spam.held"(
    db: DatabaseSync,
    args: { limit: number },
  ): { items: Omit<SpamHeldRow, "submission">[]; count: number } {
    const items = prepared(
      db,
      "SELECT id, ts, form, score FROM spam_held ORDER BY ts DESC, id DESC LIMIT ?",
    ).all(args.limit).map((row) => ({
      id: String(row.id),
      ts: String(row.ts),
      form: row.form === null ? null : String(row.form),
      score: Number(row.score),
    }));
    const count = Number(prepared(db, "SELECT count(*) AS n FROM spam_held").get()?.n ?? 0);
    return { items, count };
  },
  /** Held submission `id` (a release reads it), `undefined` when not held. */
  "spam.heldOne"(db: DatabaseSync, args: { id: string }): SpamHeldRow | undefined {
    const row = prepared(db, "SELECT id, ts, form, score, submission FROM spam_held WHERE id = ?")
      .get(args.id);
    return row === undefined ? undefined : {
      id: String(row.id),
      ts: String(row.ts),
      form: row.form === null ? null : String(row.form),
      score: Number(row.score),
      submission: String(row.submission),
    };
  },
  /**
   * Takes held submission `id` out (released), in the transaction that adds it to the outbox;
   * throws when it is not held (erased meanwhile), so that nothing of that transaction commits.
   */
  "spam.unhold"(db: DatabaseSync, args: { id: string }): void {
    const gone = prepared(db, "DELETE FROM spam_held WHERE id = ?").run(args.id).changes;
    if (Number(gone) !== 1) throw new Error("not held");
  },
  /** How many rows of these submissions are kept, lessons and held (a dry run of erasure). */
  "spam.count"(db: DatabaseSync, args: { submissions: readonly string[] }): number {
    const count = prepared(
      db,
      `SELECT (SELECT count(*) FROM spam_lessons WHERE submission = ?1)
        + (SELECT count(*) FROM spam_held WHERE id = ?1) AS n`,
    );
    return args.submissions.reduce((sum, id) => sum + Number(count.get(id)?.n ?? 0), 0);
  },
  /**
   * Erasure: subtracts what these submissions taught and removes their lessons and held copies;
   * returns how many rows went.
   */
  "spam.forget"(
    db: DatabaseSync,
    args: { submissions: readonly string[]; day: number },
  ): number {
    let count = 0;
    const unhold = prepared(db, "DELETE FROM spam_held WHERE id = ?");
    for (const submission of args.submissions) {
      count += Number(unhold.run(submission).changes);
      _teach(db, submission, null, args.day);
      count += Number(
        prepared(db, "DELETE FROM spam_lessons WHERE submission = ?").run(submission).changes,
      );
    }
    return count;
  },
  /**
   * Bounds the model: removes the lessons of submissions received before `before` (retention:
   * their counts stay, no longer undoable), every token not taught since `olderThanDay`, then the
   * rarest tokens (fewest examples, the oldest first) beyond `maxTokens`. Returns how many
   * lessons and tokens went.
   */
  "spam.prune"(
    db: DatabaseSync,
    args: { before?: string; olderThanDay?: number; maxTokens: number },
  ): { lessons: number; tokens: number } {
    const lessons = args.before === undefined ? 0 : Number(
      prepared(db, "DELETE FROM spam_lessons WHERE ts < ?").run(args.before).changes,
    ) + Number(prepared(db, "DELETE FROM spam_held WHERE ts < ?").run(args.before).changes);
    let tokens = args.olderThanDay === undefined ? 0 : Number(
      prepared(db, "DELETE FROM spam_tokens WHERE seen < ?").run(args.olderThanDay).changes,
    );
    const size = Number(prepared(db, "SELECT count(*) AS n FROM spam_tokens").get()?.n ?? 0);
    const excess = size - Math.max(0, args.maxTokens);
    if (excess > 0) {
      tokens += Number(
        prepared(
          db,
          `DELETE FROM spam_tokens WHERE token IN (SELECT token FROM spam_tokens
            ORDER BY spam + ham, seen, token LIMIT ?)`,
        ).run(excess).changes,
      );
    }
    return { lessons, tokens };
  },
} as const;

/** What `spam.teach` does (see there). */
function _teach(
  db: DatabaseSync,
  submission: string,
  label: SpamLabelRow | null,
  day: number,
): SpamChange | undefined {
  const row = prepared(db, "SELECT ts, label, tokens FROM spam_lessons WHERE submission = ?")
    .get(submission);
  if (row === undefined) return undefined;
  const before = row.label === null ? null : String(row.label) as SpamLabelRow;
  if (before === label) return undefined;
  const tokens = JSON.parse(String(row.tokens)) as string[];
  // Its tokens are dated by the day it was received, not of the press: retention's cut of the
  // tokens (`seen`) then falls with its record's, whenever it was pressed.
  const received = Math.floor(Date.parse(String(row.ts)) / 86_400_000);
  const seen = Number.isFinite(received) ? Math.min(received, day) : day;
  if (before !== null) _count(db, tokens, before, -1, seen);
  if (label !== null) _count(db, tokens, label, 1, seen);
  prepared(db, "UPDATE spam_lessons SET label = ? WHERE submission = ?").run(label, submission);
  return { rows: _rows(db, tokens), totals: _totals(db) };
}

/** Adds `delta` to `label`'s count of each token and to its total; a row at 0 and 0 goes. */
function _count(
  db: DatabaseSync,
  tokens: readonly string[],
  label: SpamLabelRow,
  delta: 1 | -1,
  day: number,
): void {
  prepared(db, "UPDATE spam_totals SET examples = max(0, examples + ?) WHERE label = ?")
    .run(delta, label);
  if (delta > 0) {
    const add = prepared(
      db,
      `INSERT INTO spam_tokens (token, spam, ham, seen) VALUES (?, ?, ?, ?)
        ON CONFLICT (token) DO UPDATE SET spam = spam + excluded.spam, ham = ham + excluded.ham,
          seen = max(seen, excluded.seen)`,
    );
    const [spam, ham] = label === "spam" ? [1, 0] : [0, 1];
    for (const token of tokens) add.run(token, spam, ham, day);
    return;
  }
  const column = label === "spam" ? "spam" : "ham";
  const subtract = prepared(
    db,
    `UPDATE spam_tokens SET ${column} = max(0, ${column} - 1) WHERE token = ?`,
  );
  const drop = prepared(db, "DELETE FROM spam_tokens WHERE token = ? AND spam = 0 AND ham = 0");
  for (const token of tokens) {
    subtract.run(token);
    drop.run(token);
  }
}

/** The rows of `tokens` now (`[token, 0, 0, 0]` for one without a row). */
function _rows(db: DatabaseSync, tokens: readonly string[]): SpamTokenRow[] {
  const get = prepared(db, "SELECT spam, ham, seen FROM spam_tokens WHERE token = ?");
  return tokens.map((token) => {
    const row = get.get(token);
    return row === undefined
      ? [token, 0, 0, 0]
      : [token, Number(row.spam), Number(row.ham), Number(row.seen)];
  });
}

/** The examples' totals. */
function _totals(db: DatabaseSync): SpamTotalsRow {
  const totals: SpamTotalsRow = { spam: 0, ham: 0 };
  for (const row of prepared(db, "SELECT label, examples FROM spam_totals").all()) {
    totals[String(row.label) as SpamLabelRow] = Number(row.examples);
  }
  return totals;
}
