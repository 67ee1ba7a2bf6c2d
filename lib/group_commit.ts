/**
 * Group commit for the backup file: lines that arrive while a write + sync is in flight are
 * queued, then written together with one write and covered by one sync. Same contract as
 * {@linkcode createAppender}: a caller is answered only after the sync that covers its line,
 * a failed write or sync rejects every caller of that batch, lines are whole and keep their order.
 *
 * @module
 */
import type { Appender, WritableFile } from "./backup.ts";

const encoder = new TextEncoder();

interface Pending {
  readonly line: string;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Builds an appender that batches concurrent lines. With one caller at a time it does exactly
 * what the serial appender does (one write, one sync per line); under load, one sync serves
 * every line queued while the previous one ran. After a failed write the next batch starts with
 * a newline, so a torn fragment never glues onto a whole record.
 */
export function createGroupAppender(file: WritableFile): Appender {
  let queue: Pending[] = [];
  let running: Promise<void> | undefined;
  let torn = false;

  const writeBatch = async (batch: Pending[]): Promise<void> => {
    const text = batch.map((pending) => pending.line).join("");
    const bytes = encoder.encode(torn ? "\n" + text : text);
    let written = 0;
    try {
      while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
      torn = false;
      await file.syncData();
    } catch (error) {
      if (written > 0 && written < bytes.byteLength) torn = true;
      for (const pending of batch) pending.reject(error);
      return;
    }
    for (const pending of batch) pending.resolve();
  };

  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      await writeBatch(batch);
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
      file.close();
    },
  };
}
