/**
 * The store's worker: the one thread that owns the service's database connection, so that no
 * SQLite call, and no disk sync, runs on the HTTP thread. Requests that arrive while a batch
 * runs are run together in the next one, with one commit (group commit,
 * lib/storage/sqlite/operations.ts `runBatch`). A thin shell: the rules are in the operations.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import type { DatabaseSync } from "node:sqlite";
import { checkpoint, copyTo, openDatabase, pathState } from "./database.ts";
import { runBatch } from "./operations.ts";
import { errorShape, type FromWorker, type OpCall, type ToWorker } from "./_protocol.ts";

let db: DatabaseSync | undefined;
/** The held descriptor of the database file (closed after the connection, never before). */
let hold: Deno.FsFile | undefined;
/** Whether the service asked for the hold. */
let holding = false;
/** Closed by the client: no request is run any more. */
let closed = false;
let path = "";
/** The file opened, to notice it removed or replaced (lib/storage/sqlite/database.ts). */
let identity = "";
let commitDelayMs = 0;
let queue: Array<Extract<ToWorker, { kind: "run" | "checkpoint" }>> = [];
let scheduled = false;
/** The batches, one after another (a batch waits while a removed file is written anew). */
let flushing: Promise<void> = Promise.resolve();

const post = (message: FromWorker) => self.postMessage(message);

// An error this thread does not catch (a defect) ends it, and the client is told in one message:
// the service logs it as one line (`database_lost`) and stops, where the runtime's own report
// would be a stack on standard error.
self.addEventListener("error", (event) => {
  event.preventDefault();
  _crashed(event.error ?? event.message);
});
self.addEventListener("unhandledrejection", (event) => {
  event.preventDefault();
  _crashed(event.reason);
});

function _crashed(error: unknown): void {
  closed = true;
  post({ kind: "crashed", error: errorShape(error) });
  self.close();
}

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const message = event.data;
  switch (message.kind) {
    case "open":
      return _open(message);
    case "run":
    case "checkpoint":
      queue.push(message);
      _schedule();
      return;
    case "close":
      // After every request sent before it.
      flushing = flushing.then(_flush).then(() => {
        db?.close();
        db = undefined;
        hold?.close();
        hold = undefined;
        closed = true;
        post({ kind: "closed" });
        self.close();
      });
  }
};

/**
 * Runs the queued requests at the next turn: every request that arrives before it joins. The turn
 * is a message to itself, not `setTimeout(…, 0)`: a timer waits a millisecond or more, which a
 * submission would wait on every commit (measured: 1.6–3.2 ms per submission against 4.0–7.1 at
 * one connection, bench/run.ts's valid case), while the message comes after those already queued.
 */
function _schedule(): void {
  if (scheduled) return;
  scheduled = true;
  _turn.port2.postMessage(0);
}
const _turn = new MessageChannel();
_turn.port1.onmessage = () => {
  scheduled = false;
  flushing = flushing.then(_flush);
};

function _open(message: Extract<ToWorker, { kind: "open" }>): void {
  try {
    holding = message.hold;
    const opened = openDatabase(message.path, { create: message.create, hold: holding });
    db = opened.db;
    hold = opened.hold;
    path = message.path;
    identity = opened.identity;
    commitDelayMs = message.commitDelayMs;
    post({
      kind: "opened",
      mode: opened.mode,
      created: opened.created,
      fromVersion: opened.fromVersion,
    });
  } catch (error) {
    post({ kind: "open_failed", error: errorShape(error) });
  }
}

async function _flush(): Promise<void> {
  const batch = queue;
  queue = [];
  let runs: Array<{ id: number; calls: readonly OpCall[] }> = [];
  for (const message of batch) {
    if (message.kind === "run") {
      runs.push(message);
      continue;
    }
    await _runAll(runs);
    runs = [];
    try {
      checkpoint(await _database());
      post({ kind: "done", id: message.id, results: [] });
    } catch (error) {
      post({ kind: "failed", id: message.id, error: errorShape(error) });
    }
  }
  await _runAll(runs);
}

async function _runAll(
  runs: ReadonlyArray<{ id: number; calls: readonly OpCall[] }>,
): Promise<void> {
  if (runs.length === 0) return;
  let ready: DatabaseSync;
  try {
    ready = await _database();
  } catch (error) {
    const shape = errorShape(error);
    for (const run of runs) post({ kind: "failed", id: run.id, error: shape });
    return;
  }
  const outcomes = runBatch(ready, runs.map((run) => run.calls));
  if (commitDelayMs > 0) _sleep(commitDelayMs);
  outcomes.forEach((outcome, index) => {
    const id = runs[index]!.id;
    post(
      outcome.ok
        ? { kind: "done", id, results: outcome.results }
        : { kind: "failed", id, error: outcome.error },
    );
  });
}

/**
 * The connection, checked to be on the file its path names before a write. A file removed
 * under the service (or its whole directory) is written anew at its path from the connection,
 * which still holds every row, as soon as the path can take a file again; until then, and when
 * another file or a link is put there, every request fails: the service answers honestly.
 */
async function _database(): Promise<DatabaseSync> {
  if (closed) throw new Error("the database is closed");
  if (db === undefined) return _reopen(); // a copy was written, its open failed: again
  const state = pathState(path, identity);
  if (state === "same") return db;
  if (state === "other") {
    throw new Error(`${path} was replaced by another file or a link: contactd never writes it`);
  }
  // Removed (the file alone, or its directory): a copy from this connection takes its place once
  // the path can take a file. Its log goes into it first and is emptied, so a -wal left at the
  // path (the file alone removed) holds nothing the copy would take for its own; and the old
  // connection closes before the copy is opened.
  checkpoint(db);
  await copyTo(db, path);
  db.close();
  db = undefined;
  hold?.close();
  hold = undefined;
  return _reopen();
}

/** Opens the database at its path again (after it was written anew there). */
function _reopen(): DatabaseSync {
  const reopened = openDatabase(path, { create: false, hold: holding });
  db = reopened.db;
  hold = reopened.hold;
  identity = reopened.identity;
  return db;
}

/** Blocks this thread (the worker's, never the HTTP thread) for `ms`: the bench's slow disk. */
function _sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
