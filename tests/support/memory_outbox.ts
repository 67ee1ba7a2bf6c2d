/**
 * An outbox in memory for the queue's tests (lib/delivery/queue.ts's `DeliveryStore`), built on
 * the real outbox's pure parts: every change to an entry (a failed attempt, done) goes through the
 * one `applyOp` the service's outbox applies to its window, so the tests' store cannot drift from
 * its rules. What it leaves out is the database: texts are kept in a map, and writing the backup
 * record is not the queue's (a done entry is noted as recorded at once, so it leaves as soon as
 * the queue is done with it).
 *
 * @module
 */
import type { DeliveryStore } from "../../lib/delivery/queue.ts";
import {
  applyOp,
  type DoneResult,
  finished,
  newEntry,
  type OutboxChange,
  type OutboxEntry,
  type OutboxSubmission,
} from "../../lib/storage/outbox_lines.ts";

/** A {@linkcode DeliveryStore} in memory; see the module documentation. */
export interface MemoryOutbox extends DeliveryStore {
  /** Adds a pending submission, with `state` over a new entry's (attempts, errors, status). */
  add(submission: OutboxSubmission, state?: Partial<OutboxEntry>): void;
  /** The ids given up, in order. */
  readonly given: string[];
}

/** A new {@linkcode MemoryOutbox}, its window unbounded. */
export function memoryOutbox(): MemoryOutbox {
  const entries = new Map<string, OutboxEntry>();
  const change = (op: OutboxChange) => {
    const entry = entries.get(op.id);
    if (entry === undefined) return;
    applyOp(entry, op);
    if (finished(entry)) entries.delete(op.id);
  };
  const texts = new Map<string, OutboxSubmission>();
  const given: string[] = [];
  const done = (id: string, ts: string, result: DoneResult) => {
    change({ op: "done", id, ts, result });
    if (result === "given_up") given.push(id);
    const entry = entries.get(id);
    if (entry !== undefined) change({ op: "recorded", id, status: entry.status ?? null });
    return Promise.resolve();
  };
  return {
    given,
    add(submission, state = {}) {
      texts.set(submission.id, submission);
      entries.set(submission.id, { ...newEntry(submission, 0, 0), ...state });
    },
    entries: () => entries.values(),
    read: (id) => {
      const text = texts.get(id);
      return text === undefined
        ? Promise.reject(new Error(`outbox has no entry ${id}`))
        : Promise.resolve(text);
    },
    failed(id, ts, error) {
      change({ op: "failed", id, ts, error });
      return Promise.resolve();
    },
    done,
  };
}
