/**
 * Group commit: lines that arrive while a write + sync is in flight are queued, then written
 * together with one write and covered by one sync. Contract: a caller is answered only after the
 * sync that covers its line, each caller by whether its own line is whole on disk and synced
 * (a write that fails half-way still answers the lines before the failure), and lines are whole
 * and keep their order.
 *
 * @module
 */
import type { TrackedFile } from "./tracked_file.ts";

/** Appends whole lines to a file and syncs them; writes never interleave. */
export interface Appender {
  /**
   * Resolves with the line's file offset once it is written whole and synced to disk; rejects
   * if it was not.
   */
  append(line: string): Promise<number>;
  /**
   * Runs `task` with the file to itself: after the write in flight (if any) is synced, and with
   * every line appended meanwhile held back, in order, until `task` settles (then written as
   * usual). One task at a time. A rewrite of the file (retention, erasure) goes through here, so
   * a line appended during it is written after it, to the file it leaves, and never lost.
   */
  exclusive<T>(task: () => Promise<T>): Promise<T>;
  /** Waits for pending appends, then closes the file. */
  close(): Promise<void>;
}

interface Pending {
  readonly line: string;
  readonly resolve: (offset: number) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Builds an appender that batches concurrent lines onto `file`. With one caller at a time it
 * does one write and one sync per line; under load, one sync serves every line queued while
 * the previous one ran.
 */
export function createGroupAppender(file: TrackedFile): Appender {
  let queue: Pending[] = [];
  let running: Promise<void> | undefined;
  /** The write in flight, if any. */
  let writing: Promise<unknown> | undefined;
  /** Settles when the exclusive task holding the file is done. */
  let held: Promise<unknown> | undefined;

  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      // One microtask turn first: callers answered by the last batch, and requests handled in
      // the same turn, join this batch instead of the one after it.
      await undefined;
      while (held !== undefined) await held;
      const batch = queue;
      queue = [];
      const write = file.writeLines(batch.map((pending) => pending.line));
      writing = write;
      const { offsets, error } = await write;
      writing = undefined;
      batch.forEach((pending, i) => {
        const offset = offsets[i];
        if (offset === undefined) pending.reject(error);
        else pending.resolve(offset);
      });
    }
    running = undefined;
  };

  return {
    append(line) {
      return new Promise<number>((resolve, reject) => {
        queue.push({ line, resolve, reject });
        running ??= drain();
      });
    },
    async exclusive<T>(task: () => Promise<T>): Promise<T> {
      while (held !== undefined) await held;
      const result = (async () => {
        while (writing !== undefined) await writing;
        return await task();
      })();
      const settled = result.then(() => {}, () => {});
      held = settled;
      try {
        return await result;
      } finally {
        if (held === settled) held = undefined;
      }
    },
    async close() {
      await running;
      file.close();
    },
  };
}
