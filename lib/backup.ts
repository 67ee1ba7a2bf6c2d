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

/** A file just opened by a {@linkcode FileSource}. */
export interface OpenedFile {
  readonly file: WritableFile;
  /** Identity of the opened file (`dev:ino`), compared with {@linkcode FileSource.identify}. */
  readonly id: string;
  /** The file's last byte is not a newline: a torn line left by a crash or a full disk. */
  readonly endsMidLine: boolean;
}

/** Where an appender (re)opens its file: the configured path. */
export interface FileSource {
  /** Identity of what the path names now, or `null` when nothing is there. */
  identify(): Promise<string | null>;
  /** Opens the path for append, creating it with mode 0600. */
  open(): Promise<OpenedFile>;
}

/**
 * Opens `path` for append, creating it with mode 0600. Throws at once if it cannot be opened,
 * so a bad path stops start-up instead of losing the first message. `onLoose` is told when a
 * file it opens (at start or after a rotation) is readable or writable by group or others.
 */
export async function openBackupFile(
  path: string,
  onLoose: (mode: number) => void = () => {},
): Promise<Appender> {
  const source = backupFileSource(path, onLoose);
  // Concurrent records share one write and one fsync (bench/sync.ts measures what it pays).
  return createGroupAppender(await source.open(), source);
}

/** The real {@linkcode FileSource} of `path`; needs read and write permission on it only. */
function backupFileSource(path: string, onLoose: (mode: number) => void): FileSource {
  return {
    async identify() {
      try {
        return identity(await Deno.stat(path));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return null;
        throw error;
      }
    },
    async open() {
      // Read too: to see whether an earlier run left a torn last line.
      const file = await Deno.open(path, { read: true, append: true, create: true, mode: 0o600 });
      try {
        const info = await file.stat();
        if (info.mode !== null && (info.mode & 0o077) !== 0) onLoose(info.mode & 0o777);
        let endsMidLine = false;
        if (info.size > 0) {
          const last = new Uint8Array(1);
          await file.seek(info.size - 1, Deno.SeekMode.Start);
          endsMidLine = (await file.read(last)) === 1 && last[0] !== 0x0a;
        }
        return { file, id: identity(info), endsMidLine };
      } catch (error) {
        file.close();
        throw error;
      }
    },
  };
}

function identity(info: Deno.FileInfo): string {
  // Without inode numbers (Windows) a rotation cannot be noticed; the path is assumed current.
  return info.ino === null ? "" : `${info.dev}:${info.ino}`;
}

const encoder = new TextEncoder();

/** The backup file as appenders see it: reopened after a rotation, torn lines tracked. */
export interface TrackedFile {
  /**
   * Writes `text` whole to the current file and syncs it. After a failed write the next text
   * starts with a newline, so a torn fragment (e.g. disk full mid-line, or a crash) never glues
   * onto the next whole record. Rejects if the text was not written whole and synced.
   */
  writeSynced(text: string): Promise<void>;
  /** Closes the current file, if one is open. */
  close(): void;
}

/**
 * Tracks the open backup file. With a `source`, each write first checks that the path still
 * names the open file; if it was renamed away, removed or replaced, the path is opened afresh
 * (created 0600), so a rotated file is never written after the rotation is noticed. If that
 * open fails, the write fails and the next one tries again: recovery is automatic once the
 * fault clears.
 */
export function trackFile(opened: OpenedFile, source?: FileSource): TrackedFile {
  let current: OpenedFile | undefined = opened;
  let torn = opened.endsMidLine;

  const currentFile = async (): Promise<WritableFile> => {
    if (current !== undefined && (source === undefined || await source.identify() === current.id)) {
      return current.file;
    }
    if (current !== undefined) {
      const old = current.file;
      current = undefined;
      try {
        old.close();
      } catch {
        // Already unusable; the new file is what matters.
      }
    }
    current = await source!.open();
    torn = current.endsMidLine;
    return current.file;
  };

  return {
    async writeSynced(text) {
      const file = await currentFile();
      const bytes = encoder.encode(torn ? "\n" + text : text);
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
    },
    close() {
      current?.file.close();
      current = undefined;
    },
  };
}
