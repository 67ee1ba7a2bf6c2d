/**
 * The private backup file: one JSON line per accepted submission, synced before the answer.
 *
 * @module
 */
import { createGroupAppender } from "./group_commit.ts";

/** One line of the backup file; keys in this order. */
export interface BackupRecord {
  /** UTC, whole seconds, trailing `Z`. */
  readonly ts: string;
  readonly name: string;
  readonly contact: string;
  readonly message: string;
  readonly ip: string;
  readonly messenger_ok: boolean;
  readonly messenger_error: string | null;
}

/** Serialises a record as one line (JSON escapes every newline inside values). */
export function formatRecord(record: BackupRecord): string {
  const { ts, name, contact, message, ip, messenger_ok, messenger_error } = record;
  return JSON.stringify({ ts, name, contact, message, ip, messenger_ok, messenger_error }) + "\n";
}

/** Formats a time as the record's `ts`: `2026-11-22T14:03:09Z`. */
export function formatTimestamp(time: Date): string {
  return time.toISOString().slice(0, 19) + "Z";
}

/** Appends whole lines to a file and syncs them; writes never interleave. */
export interface Appender {
  /** Resolves once `line` is written whole and synced to disk; rejects if it was not. */
  append(line: string): Promise<void>;
  /** Waits for pending appends, then closes the file. */
  close(): Promise<void>;
}

/** The minimal file surface an {@linkcode Appender} needs (so tests can inject faults). */
export interface WritableFile {
  write(bytes: Uint8Array): Promise<number>;
  syncData(): Promise<void>;
  close(): void;
}

/**
 * Opens `path` for append, creating it with mode 0600. Throws at once if it cannot be opened,
 * so a bad path stops start-up instead of losing the first message. `onLoose` is told when an
 * existing file is readable or writable by group or others.
 */
export async function openBackupFile(
  path: string,
  onLoose: (mode: number) => void = () => {},
): Promise<Appender> {
  const file = await Deno.open(path, { append: true, create: true, mode: 0o600 });
  const { mode } = await file.stat();
  if (mode !== null && (mode & 0o077) !== 0) onLoose(mode & 0o777);
  // Concurrent records share one write and one fsync (see bench/sync.ts for what it pays).
  return createGroupAppender(file);
}

const encoder = new TextEncoder();

/**
 * Serialises appends on one file. After a failed write the next line starts with a newline,
 * so a torn fragment (e.g. disk full mid-line) never glues onto the next whole record.
 */
export function createAppender(file: WritableFile): Appender {
  let queue: Promise<void> = Promise.resolve();
  let torn = false;

  const writeLine = async (line: string): Promise<void> => {
    const bytes = encoder.encode(torn ? "\n" + line : line);
    let written = 0;
    try {
      while (written < bytes.byteLength) {
        written += await file.write(bytes.subarray(written));
      }
    } catch (error) {
      if (written > 0) torn = true;
      throw error;
    }
    torn = false;
    await file.syncData();
  };

  return {
    append(line) {
      const done = queue.then(() => writeLine(line));
      queue = done.catch(() => {});
      return done;
    },
    async close() {
      await queue;
      file.close();
    },
  };
}
