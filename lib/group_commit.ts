/**
 * Group commit for the backup file: lines that arrive while a write + sync is in flight are
 * queued, then written together with one write and covered by one sync. Contract: a caller is
 * answered only after the sync that covers its line, a failed write or sync rejects every caller
 * of that batch, lines are whole and keep their order, and a rotated file is reopened (see
 * {@linkcode trackFile}).
 *
 * @module
 */
import { type Appender, type FileSource, type OpenedFile, trackFile } from "./backup.ts";

interface Pending {
  readonly line: string;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Builds an appender that batches concurrent lines. With one caller at a time it does one
 * write and one sync per line; under load, one sync serves every line queued while the previous
 * one ran.
 */
export function createGroupAppender(opened: OpenedFile, source?: FileSource): Appender {
  const tracked = trackFile(opened, source);
  let queue: Pending[] = [];
  let running: Promise<void> | undefined;

  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      // One microtask turn first: callers answered by the last batch, and requests handled in
      // the same turn, join this batch instead of the one after it.
      await undefined;
      const batch = queue;
      queue = [];
      try {
        await tracked.writeSynced(batch.map((pending) => pending.line).join(""));
      } catch (error) {
        for (const pending of batch) pending.reject(error);
        continue;
      }
      for (const pending of batch) pending.resolve();
    }
    running = undefined;
  };

  return {
    append(line) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ line, resolve, reject });
        running ??= drain();
      });
    },
    async close() {
      await running;
      tracked.close();
    },
  };
}
