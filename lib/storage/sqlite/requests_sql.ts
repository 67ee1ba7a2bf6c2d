/**
 * The `requests` table: what a command asks the running service to do (an erasure, which must
 * rewrite the backup file the service appends to), and the service's answer, read back by the
 * command. A row holds what to do (`body`, JSON) until it is answered, then only the answer (the
 * erasure's counts); the command removes it once read. A forget that did not finish keeps its
 * note in a row of its own (lib/storage/forget_request.ts `FORGET_UNFINISHED`).
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** A request as the service takes it. */
export interface RequestRow {
  readonly seq: number;
  readonly body: string;
}

/** A request's state as the command reads it. */
export interface RequestState {
  readonly state: "waiting" | "working" | "done" | "failed";
  readonly answer: string | null;
}

/** The requests' operations (lib/storage/sqlite/operations.ts). */
export const REQUESTS_OPS = {
  /**
   * Adds a request of `kind`, `waiting` unless `state` says otherwise (a forget the command
   * performs itself is `working` at once); returns its number.
   */
  "requests.add"(
    db: DatabaseSync,
    args: { kind: string; body: string; created: string; state?: "working" | "failed" },
  ): number {
    const result = prepared(
      db,
      "INSERT INTO requests (kind, body, created, state) VALUES (?, ?, ?, ?)",
    ).run(args.kind, args.body, args.created, args.state ?? "waiting");
    return Number(result.lastInsertRowid);
  },
  /** Every request of `kind`, oldest first, whatever its state. */
  "requests.list"(db: DatabaseSync, args: { kind: string }): RequestRow[] {
    return prepared(db, "SELECT seq, body FROM requests WHERE kind = ? ORDER BY seq")
      .all(args.kind).map((row) => ({ seq: Number(row.seq), body: String(row.body) }));
  },
  /** Takes the oldest request of `kind` still waiting (now `working`), or `undefined`. */
  "requests.next"(db: DatabaseSync, args: { kind: string }): RequestRow | undefined {
    const row = prepared(
      db,
      "SELECT seq, body FROM requests WHERE kind = ? AND state = 'waiting' ORDER BY seq LIMIT 1",
    ).get(args.kind);
    if (row === undefined) return undefined;
    prepared(db, "UPDATE requests SET state = 'working' WHERE seq = ?").run(Number(row.seq));
    return { seq: Number(row.seq), body: String(row.body) };
  },
  /**
   * Rewrites what request `seq` holds while the service works on it (`body`: what it asks, and
   * what was done of it by now, for a run again after a crash); nothing once it is answered.
   */
  "requests.progress"(db: DatabaseSync, args: { seq: number; body: string }): void {
    prepared(db, "UPDATE requests SET body = ? WHERE seq = ? AND state = 'working'")
      .run(args.body, args.seq);
  },
  /** Requests a stopped service was working on wait again (the start does them anew). */
  "requests.reset"(db: DatabaseSync): number {
    return Number(
      prepared(db, "UPDATE requests SET state = 'waiting' WHERE state = 'working'").run().changes,
    );
  },
  /** Answers request `seq` (what it asked for is cleared: only the answer stays). */
  "requests.answer"(
    db: DatabaseSync,
    args: { seq: number; state: "done" | "failed"; answer: string },
  ): void {
    prepared(db, "UPDATE requests SET state = ?, answer = ?, body = '' WHERE seq = ?")
      .run(args.state, args.answer, args.seq);
  },
  /** Request `seq`'s state, or `undefined` when it is gone. */
  "requests.get"(db: DatabaseSync, args: { seq: number }): RequestState | undefined {
    const row = prepared(db, "SELECT state, answer FROM requests WHERE seq = ?").get(args.seq);
    return row === undefined ? undefined : {
      state: row.state as RequestState["state"],
      answer: row.answer === null ? null : String(row.answer),
    };
  },
  /** Removes request `seq` (read, or given up by its command). */
  "requests.remove"(db: DatabaseSync, args: { seq: number }): void {
    prepared(db, "DELETE FROM requests WHERE seq = ?").run(args.seq);
  },
} as const;
