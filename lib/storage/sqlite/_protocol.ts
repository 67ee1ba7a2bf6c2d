/**
 * The messages between the store's client (lib/storage/store.ts) and its worker
 * (lib/storage/sqlite/worker.ts), and how an error crosses between them.
 *
 * @module
 */

/** One operation of lib/storage/sqlite/operations.ts with its argument. */
export interface OpCall {
  readonly op: string;
  readonly args: unknown;
}

/** Client to worker. */
export type ToWorker =
  | {
    readonly kind: "open";
    readonly path: string;
    readonly create: boolean;
    /** Hold the file for this process (lib/storage/sqlite/database.ts `hold`): the service. */
    readonly hold: boolean;
    /** A test hook: every commit takes this much longer (the worker sleeps), for the bench. */
    readonly commitDelayMs: number;
  }
  /** Operations run in one transaction, answered together. */
  | { readonly kind: "run"; readonly id: number; readonly calls: readonly OpCall[] }
  /** `wal_checkpoint(TRUNCATE)`, after every write before it. */
  | { readonly kind: "checkpoint"; readonly id: number }
  | { readonly kind: "close" };

/** Worker to client. */
export type FromWorker =
  | {
    readonly kind: "opened";
    readonly mode: number;
    readonly created: boolean;
    readonly fromVersion: number;
  }
  | { readonly kind: "open_failed"; readonly error: ErrorShape }
  | { readonly kind: "done"; readonly id: number; readonly results: readonly unknown[] }
  | { readonly kind: "failed"; readonly id: number; readonly error: ErrorShape }
  | { readonly kind: "closed" }
  /** An error the worker did not catch (a defect): it has ended, the database is lost. */
  | { readonly kind: "crashed"; readonly error: ErrorShape };

/** An error as it crosses the worker boundary. */
export interface ErrorShape {
  readonly name: string;
  readonly message: string;
  /** `DatabaseRefused`'s reason. */
  readonly reason?: string;
  /** SQLite's result code (`SQLITE_FULL` is 13, `SQLITE_BUSY` 5), when SQLite failed. */
  readonly errcode?: number;
}

/** The shape of `error` for the other side. */
export function errorShape(error: unknown): ErrorShape {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const { reason, errcode } = error as { reason?: unknown; errcode?: unknown };
  return {
    name: error.name,
    message: error.message,
    ...(typeof reason === "string" ? { reason } : {}),
    ...(typeof errcode === "number" ? { errcode } : {}),
  };
}
