/**
 * An outbox in memory for the queue's tests (lib/delivery/queue.ts's `DeliveryStore`), built on
 * the real outbox's pure parts: entries are held by an {@linkcode OutboxWindow} and every change
 * (a failed attempt, done) goes through the file format's one `applyOp`, so the tests' store
 * cannot drift from the file's rules. What it leaves out is the file: texts are kept in a map,
 * and writing the backup record is not the queue's (a done entry is noted as recorded at once, so
 * it leaves the window as soon as the queue is done with it).
 *
 * @module
 */
import type { DeliveryStore } from "../../lib/delivery/queue.ts";
import {
  type DoneResult,
  newEntry,
  type OutboxEntry,
  type OutboxSubmission,
} from "../../lib/storage/outbox_lines.ts";
import { OutboxWindow } from "../../lib/storage/window.ts";

/** A {@linkcode DeliveryStore} in memory; see the module documentation. */
export interface MemoryOutbox extends DeliveryStore {
  /** Adds a pending submission, with `state` over a new entry's (attempts, errors, status). */
  add(submission: OutboxSubmission, state?: Partial<OutboxEntry>): void;
  /** The ids given up, in order. */
  readonly given: string[];
}

/** A new {@linkcode MemoryOutbox}, its window unbounded. */
export function memoryOutbox(): MemoryOutbox {
  const window = new OutboxWindow({ capacity: Infinity, compactAfter: Infinity, fileBytes: 0 });
  const texts = new Map<string, OutboxSubmission>();
  const given: string[] = [];
  const done = (id: string, ts: string, result: DoneResult) => {
    window.change({ op: "done", id, ts, result });
    if (result === "given_up") given.push(id);
    const entry = window.entries.get(id);
    if (entry !== undefined) window.change({ op: "recorded", id, status: entry.status ?? null });
    return Promise.resolve();
  };
  return {
    given,
    add(submission, state = {}) {
      texts.set(submission.id, submission);
      window.hold({ ...newEntry(submission, 0, 0), ...state });
    },
    entries: () => window.entries.values(),
    read: (id) => {
      const text = texts.get(id);
      return text === undefined
        ? Promise.reject(new Error(`outbox has no entry ${id}`))
        : Promise.resolve(text);
    },
    failed(id, ts, error) {
      window.change({ op: "failed", id, ts, error });
      return Promise.resolve();
    },
    done,
  };
}
