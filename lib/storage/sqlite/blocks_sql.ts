/**
 * The spam block list's table (`blocks`): one row per key a submission marked as spam blocks
 * (its client address key, its contact), until when, by whom. The rules (expiry, matching, what
 * erasure names) are lib/spam/block_list.ts's; these operations only keep the rows.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** What a block holds. */
export type BlockKindRow = "address" | "contact";

/** One block (lib/spam/block_list.ts `Block`). */
export interface BlockRow {
  readonly kind: BlockKindRow;
  readonly value: string;
  readonly since: string;
  readonly until: string;
  readonly submission: string;
  readonly by?: number;
}

/** Which block: a key and the submission that made it. */
export interface BlockRowKey {
  readonly kind: BlockKindRow;
  readonly value: string;
  readonly submission: string;
}

const _columns = "kind, value, since, until, submission, by_id";

/** The `blocks` table's operations (lib/storage/sqlite/operations.ts). */
export const BLOCKS_OPS = {
  /** Every block, expired ones included, in the order made. */
  "blocks.all"(db: DatabaseSync): BlockRow[] {
    return prepared(db, `SELECT ${_columns} FROM blocks ORDER BY since, rowid`).all()
      .map(_block);
  },
  /**
   * Adds `blocks`; returns those added (a submission that already blocks a key makes no second
   * block of it).
   */
  "blocks.add"(db: DatabaseSync, args: { blocks: readonly BlockRow[] }): BlockRow[] {
    const insert = prepared(
      db,
      `INSERT INTO blocks (kind, value, submission, since, until, by_id) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT DO NOTHING`,
    );
    return args.blocks.filter((block) =>
      Number(
        insert.run(
          block.kind,
          block.value,
          block.submission,
          block.since,
          block.until,
          block.by ?? null,
        ).changes,
      ) > 0
    );
  },
  /** Removes the blocks `submission` made, and only those (Not spam); returns them. */
  "blocks.lift"(db: DatabaseSync, args: { submission: string }): BlockRow[] {
    return prepared(db, `DELETE FROM blocks WHERE submission = ? RETURNING ${_columns}`)
      .all(args.submission).map(_block);
  },
  /**
   * Removes every block of a key, whichever submission made it (`contactd unblock`); returns
   * them.
   */
  "blocks.liftKey"(db: DatabaseSync, args: { kind: BlockKindRow; value: string }): BlockRow[] {
    return prepared(db, `DELETE FROM blocks WHERE kind = ? AND value = ? RETURNING ${_columns}`)
      .all(args.kind, args.value).map(_block);
  },
  /** Removes exactly the blocks `blocks` names (expiry, retention, erasure); returns how many. */
  "blocks.remove"(db: DatabaseSync, args: { blocks: readonly BlockRowKey[] }): number {
    const remove = prepared(
      db,
      "DELETE FROM blocks WHERE kind = ? AND value = ? AND submission = ?",
    );
    let count = 0;
    for (const block of args.blocks) {
      count += Number(remove.run(block.kind, block.value, block.submission).changes);
    }
    return count;
  },
} as const;

/** A row as a block (`by` left out when unknown). */
function _block(row: Record<string, unknown>): BlockRow {
  const by = row.by_id;
  return {
    kind: String(row.kind) as BlockKindRow,
    value: String(row.value),
    since: String(row.since),
    until: String(row.until),
    submission: String(row.submission),
    ...(by === null ? {} : { by: Number(by) }),
  };
}
