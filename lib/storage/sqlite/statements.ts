/**
 * Prepared statements, kept per connection: each SQL text is prepared once.
 *
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

const _cache = new WeakMap<DatabaseSync, Map<string, StatementSync>>();

/** The statement of `sql` on `db`, prepared on first use. */
export function prepared(db: DatabaseSync, sql: string): StatementSync {
  let statements = _cache.get(db);
  if (statements === undefined) _cache.set(db, statements = new Map());
  let statement = statements.get(sql);
  if (statement === undefined) statements.set(sql, statement = db.prepare(sql));
  return statement;
}
