/**
 * The one storage interface: contactd's state (outbox, chat ledger, block list, replies, the
 * updates offset, the commands' requests) in one SQLite database beside the backup file
 * (`MESSAGES_FILE.db`). Async and transactional: {@linkcode Store.run} is one operation in its
 * own transaction, {@linkcode Store.transaction} several that succeed or fail together. The
 * operations and every line of SQL are in lib/storage/sqlite/; nothing above lib/storage sees
 * SQL.
 *
 * Two implementations of the interface share those operations: {@linkcode openWorkerStore}, the
 * service's, where a worker owns the connection and commits concurrent requests together (no
 * SQLite call nor disk sync on the HTTP thread), run from its bundle
 * (`lib/storage/sqlite/worker_bundle.json`, made by `deno task worker`); and
 * {@linkcode openLocalStore}, a command's, which runs them in its own thread (a command serves no
 * one while it waits).
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { checkpoint, openDatabase } from "./sqlite/database.ts";
import { type OpArgs, type OpName, type OpResult, runBatch } from "./sqlite/operations.ts";
import type { ErrorShape, FromWorker, OpCall, ToWorker } from "./sqlite/_protocol.ts";
import type { FollowUpRefusal } from "./sqlite/cases_sql.ts";
import { errorShape } from "./sqlite/_protocol.ts";
import workerBundle from "./sqlite/worker_bundle.json" with { type: "json" };

export type { OpArgs, OpName, OpResult } from "./sqlite/operations.ts";
export type { FollowUpRefusal } from "./sqlite/cases_sql.ts";

export { databasePath } from "../common/state_files.ts";
/**
 * Whether a running service holds the database file (its `hold`): a command asks before it opens
 * the database itself, never after (closing the descriptor it asks with would drop the locks its
 * own connection holds).
 */
export { databaseHeld } from "./sqlite/database.ts";

/** One operation and its argument, for {@linkcode Store.transaction}. */
export type StoreCall = OpCall;

/** A typed {@linkcode StoreCall}. */
export function call<K extends OpName>(op: K, args: OpArgs<K>): StoreCall {
  return { op, args };
}

/** contactd's state. */
export interface Store {
  /** Runs one operation in its own transaction. */
  run<K extends OpName>(op: K, args: OpArgs<K>): Promise<OpResult<K>>;
  /** Runs `calls` in one transaction: every one, or none. Resolves with their results in order. */
  transaction(calls: readonly StoreCall[]): Promise<unknown[]>;
  /**
   * Empties the write-ahead log into the database file (`wal_checkpoint(TRUNCATE)`), after every
   * write before it: with `secure_delete`, deleted rows' text is then gone from both files.
   * Rejects when it could not finish.
   */
  checkpoint(): Promise<void>;
  /** Waits for the operations under way, then closes the database; later calls reject. */
  close(): Promise<void>;
}

/** What opening found. */
export interface StoreOpened {
  /** The database file's permission bits. */
  readonly mode: number;
  /** Created by this open. */
  readonly created: boolean;
  /** The schema version before this open (0: new). */
  readonly fromVersion: number;
}

/** The service's store, which can also be lost (its worker ended). */
export interface WorkerStore extends Store {
  readonly opened: StoreOpened;
  /** Settles (never rejects) with the error when the worker has ended unasked. */
  readonly lost: Promise<Error>;
  /** Whether the worker has ended unasked (`lost` settled): nothing can be stored any more. */
  readonly isLost: () => boolean;
}

/** An operation failed in the database (or the store could not be used). */
export class StoreError extends Error {
  /**
   * `DatabaseRefused`'s reason (`link`, `not_file`, `damaged`, `newer`), when refused; a
   * follow-up's refusal (`FollowUpRefused`: `case_gone`, `case_waiting`; read it with
   * {@linkcode followUpRefusal}).
   */
  readonly reason: string | undefined;
  /** SQLite's result code, when SQLite failed (13: the disk is full). */
  readonly errcode: number | undefined;

  constructor(shape: ErrorShape) {
    super(shape.message);
    this.name = shape.name === "Error" ? "StoreError" : shape.name;
    this.reason = shape.reason;
    this.errcode = shape.errcode;
  }
}

/**
 * Why the database refused a follow-up, when `error` is that refusal (`cases.followUp` in
 * lib/storage/sqlite/cases_sql.ts); else `undefined`.
 */
export function followUpRefusal(error: unknown): FollowUpRefusal | undefined {
  if (!(error instanceof StoreError) || error.name !== "FollowUpRefused") return undefined;
  return error.reason === "case_gone" || error.reason === "case_waiting" ? error.reason : undefined;
}

/** SQLite's `SQLITE_FULL`: the disk (or a file-size limit) is full. */
export const SQLITE_FULL = 13;

/** Options of {@linkcode openWorkerStore}. */
export interface WorkerStoreOptions {
  /** Create the database when it is missing. */
  readonly create: boolean;
  /**
   * Hold the file for this process until closed (the service): a second holder is refused with
   * reason `held` (lib/storage/sqlite/database.ts `hold`).
   */
  readonly hold?: boolean;
  /** A test hook for the bench: every commit takes this many milliseconds longer. */
  readonly commitDelayMs?: number;
}

/**
 * Opens the database at `path` in a worker that owns it. Rejects with a {@linkcode StoreError}
 * when it cannot be opened (refused, damaged, a newer schema, the system's error).
 */
export function openWorkerStore(path: string, options: WorkerStoreOptions): Promise<WorkerStore> {
  // From its bundle (tasks/worker_bundle.ts), as a blob: URL: a worker's local module would need
  // --allow-read on the sources, a blob: one needs none, and the bundle is in the module graph.
  const url = URL.createObjectURL(new Blob([workerBundle.source], { type: "text/javascript" }));
  const worker = new Worker(url, { type: "module" });
  URL.revokeObjectURL(url);
  return new Promise((resolve, reject) => {
    const client = new _WorkerClient(
      worker,
      (opened) => resolve(client.withOpened(opened)),
      reject,
    );
    client.post({
      kind: "open",
      path,
      create: options.create,
      hold: options.hold ?? false,
      commitDelayMs: options.commitDelayMs ?? 0,
    });
  });
}

class _WorkerClient {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, { resolve(v: unknown[]): void; reject(e: Error): void }>();
  #next = 1;
  #ended: Error | undefined;
  #closing: Promise<void> | undefined;
  #onClosed: (() => void) | undefined;
  #onLost!: (error: Error) => void;
  readonly lost = new Promise<Error>((resolve) => this.#onLost = resolve);
  #isLost = false;

  constructor(
    worker: Worker,
    onOpened: (opened: StoreOpened) => void,
    onOpenFailed: (error: Error) => void,
  ) {
    this.#worker = worker;
    let open = false;
    worker.onmessage = (event: MessageEvent<FromWorker>) => {
      const message = event.data;
      if (message.kind === "opened") {
        open = true;
        const { mode, created, fromVersion } = message;
        onOpened({ mode, created, fromVersion });
      } else if (message.kind === "open_failed") {
        this.#end(new StoreError(message.error), false);
        onOpenFailed(new StoreError(message.error));
      } else if (message.kind === "closed") {
        this.#onClosed?.();
      } else if (message.kind === "crashed") {
        const error = new StoreError(message.error);
        if (!open) onOpenFailed(error);
        this.#end(error, open);
      } else {
        const waiting = this.#waiting.get(message.id);
        this.#waiting.delete(message.id);
        if (message.kind === "done") waiting?.resolve([...message.results]);
        else waiting?.reject(new StoreError(message.error));
      }
    };
    worker.onerror = (event) => {
      event.preventDefault();
      const error = new StoreError(errorShape(event.error ?? new Error(event.message)));
      if (!open) onOpenFailed(error);
      this.#end(error, open);
    };
  }

  post(message: ToWorker): void {
    this.#worker.postMessage(message);
  }

  withOpened(opened: StoreOpened): WorkerStore {
    return {
      opened,
      lost: this.lost,
      isLost: () => this.#isLost,
      run: async (op, args) => (await this.request([{ op, args }]))[0] as never,
      transaction: (calls) => this.request(calls),
      checkpoint: async () => {
        await this.#ask((id) => ({ kind: "checkpoint", id }));
      },
      close: () => this.close(),
    };
  }

  request(calls: readonly OpCall[]): Promise<unknown[]> {
    return this.#ask((id) => ({ kind: "run", id, calls }));
  }

  #ask(message: (id: number) => ToWorker): Promise<unknown[]> {
    if (this.#ended !== undefined || this.#closing !== undefined) {
      return Promise.reject(this.#ended ?? new StoreError(errorShape(new Error("store closed"))));
    }
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.post(message(id));
    });
  }

  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    if (this.#ended !== undefined) return this.#closing = Promise.resolve();
    this.#closing = new Promise<void>((resolve) => {
      this.#onClosed = () => {
        this.#end(new StoreError(errorShape(new Error("store closed"))), false);
        resolve();
      };
      // The worker answers every request sent before this one first.
      this.post({ kind: "close" });
    });
    return this.#closing;
  }

  #end(error: Error, lost: boolean): void {
    if (this.#ended !== undefined) return;
    this.#ended = error;
    for (const waiting of this.#waiting.values()) waiting.reject(error);
    this.#waiting.clear();
    this.#worker.terminate();
    if (lost) {
      this.#isLost = true;
      this.#onLost(error);
    }
  }
}

/**
 * Opens the database at `path` in this thread (a command). Throws as {@linkcode openWorkerStore}
 * rejects; `Deno.errors.NotFound` when it is missing and `create` is false.
 */
export function openLocalStore(path: string, options: { create: boolean }): Store & {
  readonly opened: StoreOpened;
} {
  let db: DatabaseSync | undefined;
  let opened: StoreOpened;
  try {
    const result = openDatabase(path, options);
    db = result.db;
    opened = { mode: result.mode, created: result.created, fromVersion: result.fromVersion };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) throw error;
    throw new StoreError(errorShape(error));
  }
  const run = (calls: readonly OpCall[]): Promise<unknown[]> => {
    if (db === undefined) return Promise.reject(new StoreError(errorShape("store closed")));
    const [outcome] = runBatch(db, [calls]);
    return outcome!.ok
      ? Promise.resolve(outcome!.results)
      : Promise.reject(new StoreError(outcome!.error));
  };
  return {
    opened,
    run: async (op, args) => (await run([{ op, args }]))[0] as never,
    transaction: run,
    checkpoint: () => {
      try {
        if (db === undefined) throw new Error("store closed");
        checkpoint(db);
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(new StoreError(errorShape(error)));
      }
    },
    close: () => {
      db?.close();
      db = undefined;
      return Promise.resolve();
    },
  };
}
