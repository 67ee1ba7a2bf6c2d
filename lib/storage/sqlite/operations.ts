/**
 * Every operation on the database, by name, and how a batch of calls runs: the one place the
 * store's worker (and a command's local store) turns a call into SQL. Each table's statements
 * live in its own `*_sql.ts` file; an operation is a synchronous function of the connection and
 * one structured-clonable argument, returning a structured-clonable result.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import type { ErrorShape, OpCall } from "./_protocol.ts";
import { errorShape } from "./_protocol.ts";
import { BLOCKS_OPS } from "./blocks_sql.ts";
import { FILES_OPS } from "./files_sql.ts";
import { CASES_OPS } from "./cases_sql.ts";
import { IMPORT_OPS } from "./import_sql.ts";
import { LEDGER_OPS } from "./ledger_sql.ts";
import { META_OPS } from "./meta_sql.ts";
import { OUTBOX_OPS } from "./outbox_sql.ts";
import { REQUESTS_OPS } from "./requests_sql.ts";
import { REPLIES_OPS } from "./replies_sql.ts";
import { REPLY_SOURCES_OPS } from "./reply_sources_sql.ts";
import { SPAM_OPS } from "./spam_sql.ts";

/** Every operation, by name. */
export const OPERATIONS = {
  ...OUTBOX_OPS,
  ...REQUESTS_OPS,
  ...META_OPS,
  ...LEDGER_OPS,
  ...BLOCKS_OPS,
  ...REPLIES_OPS,
  ...REPLY_SOURCES_OPS,
  ...IMPORT_OPS,
  ...FILES_OPS,
  ...CASES_OPS,
  ...SPAM_OPS,
} as const;

/** The operations' table, as a type. */
export type Operations = typeof OPERATIONS;
/** An operation's name. */
export type OpName = keyof Operations;
/** What operation `K` takes (`undefined` for one without an argument). */
export type OpArgs<K extends OpName> = Parameters<Operations[K]> extends [unknown, infer A] ? A
  : undefined;
/** What operation `K` returns. */
export type OpResult<K extends OpName> = ReturnType<Operations[K]>;

/** A request's outcome within a batch. */
export type RequestOutcome =
  | { readonly ok: true; readonly results: unknown[] }
  | { readonly ok: false; readonly error: ErrorShape };

/**
 * Runs `requests` (each a list of calls that succeed or fail together) in one transaction with
 * one commit: group commit. A request that throws is rolled back to its savepoint and fails
 * alone; when the commit itself fails, every request fails with its error.
 */
export function runBatch(
  db: DatabaseSync,
  requests: readonly (readonly OpCall[])[],
): RequestOutcome[] {
  const outcomes: RequestOutcome[] = [];
  try {
    db.exec("BEGIN IMMEDIATE");
    for (const calls of requests) outcomes.push(_runRequest(db, calls));
    db.exec("COMMIT");
    return outcomes;
  } catch (error) {
    // The transaction itself failed (SQLite rolled it back, or the commit failed): nothing of
    // it was written.
    if (db.isTransaction) db.exec("ROLLBACK");
    const shape = errorShape(error);
    return requests.map(() => ({ ok: false, error: shape }));
  }
}

/** One request within the open transaction; throws when the transaction is lost. */
function _runRequest(db: DatabaseSync, calls: readonly OpCall[]): RequestOutcome {
  db.exec("SAVEPOINT request");
  try {
    const results = calls.map((call) => runCall(db, call));
    db.exec("RELEASE request");
    return { ok: true, results };
  } catch (error) {
    if (!db.isTransaction) throw error;
    db.exec("ROLLBACK TO request");
    db.exec("RELEASE request");
    return { ok: false, error: errorShape(error) };
  }
}

/** Runs one call; an unknown operation throws. */
export function runCall(db: DatabaseSync, call: OpCall): unknown {
  if (!Object.hasOwn(OPERATIONS, call.op)) throw new Error(`unknown operation ${call.op}`);
  const operation = OPERATIONS[call.op as OpName] as (db: DatabaseSync, args: unknown) => unknown;
  return operation(db, call.args);
}
