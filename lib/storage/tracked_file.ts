/**
 * An append-only file of whole lines: reopened when its path was rotated, torn lines never glued
 * onto the next one, and each write told exactly which of its lines are on disk and synced.
 *
 * @module
 */
import { denoFs, fileIdentity, openNoFollow, type StorageFs } from "./file_system.ts";

/** The minimal file surface a {@linkcode TrackedFile} needs (so tests can inject faults). */
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
  /** The file's length when opened, in bytes (where the next write lands). */
  readonly size: number;
}

/** Where a tracked file is (re)opened: its configured path. */
export interface FileSource {
  /** Identity of what the path names now, or `null` when nothing is there. */
  identify(): Promise<string | null>;
  /** Opens the path for append, creating it with mode 0600. */
  open(): Promise<OpenedFile>;
}

/** What a write of several lines achieved. */
export interface WriteOutcome {
  /**
   * The file offset of each line that is whole on disk and synced, from the first line on; shorter
   * than the lines written when `error` stopped the rest.
   */
  readonly offsets: readonly number[];
  /** Why the lines after `offsets.length` (or all of them) are not on disk. */
  readonly error?: unknown;
}

/** A file of whole lines, as appenders see it. */
export interface TrackedFile {
  /**
   * Writes `lines` (each ending in `"\n"`) with one write and one sync. After a failed write the
   * next text starts with a newline, so a torn fragment (disk full mid-line, a crash) never glues
   * onto the next whole line. Never rejects: the outcome says which lines made it.
   */
  writeLines(lines: readonly string[]): Promise<WriteOutcome>;
  /** Closes the current file, if one is open. */
  close(): void;
}

const encoder = new TextEncoder();

/**
 * Tracks an open file. With a `source`, each write first checks that the path still names the
 * open file; if it was renamed away, removed or replaced, the path is opened afresh (created
 * 0600), so a rotated file is never written after the rotation is noticed. If that open fails,
 * the write fails and the next one tries again: recovery is automatic once the fault clears.
 */
export function trackFile(opened: OpenedFile, source?: FileSource): TrackedFile {
  let current: OpenedFile | undefined = opened;
  let torn = opened.endsMidLine;
  let position = opened.size;

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
    position = current.size;
    return current.file;
  };

  return {
    async writeLines(lines) {
      let file: WritableFile;
      try {
        file = await currentFile();
      } catch (error) {
        return { offsets: [], error };
      }
      const { bytes, starts, ends } = encodeLines(torn ? "\n" : "", lines);
      const start = position;
      let written = 0;
      let writeError: unknown;
      let failed = false;
      try {
        while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
      } catch (error) {
        writeError = error;
        failed = true;
      }
      position += written;
      // Lines written whole before a failure are on disk once synced: they keep their answer.
      const whole = failed ? ends.filter((end) => end <= written).length : lines.length;
      // A failure that wrote something leaves the file mid-line unless it stopped at a line's end.
      if (!failed) torn = false;
      else if (written > 0) torn = written !== starts[0] && !ends.includes(written);
      if (whole > 0) {
        try {
          await file.syncData();
        } catch (error) {
          return { offsets: [], error };
        }
      }
      const offsets = starts.slice(0, whole).map((at) => start + at);
      return failed ? { offsets, error: writeError } : { offsets };
    },
    close() {
      current?.file.close();
      current = undefined;
    },
  };
}

/** `prefix` and the lines as UTF-8, with where each line starts and ends in those bytes. */
function encodeLines(
  prefix: string,
  lines: readonly string[],
): { bytes: Uint8Array; starts: number[]; ends: number[] } {
  let capacity = prefix.length * 3;
  for (const line of lines) capacity += line.length * 3;
  const buffer = new Uint8Array(capacity);
  let at = encoder.encodeInto(prefix, buffer).written;
  const starts: number[] = [];
  const ends: number[] = [];
  for (const line of lines) {
    starts.push(at);
    at += encoder.encodeInto(line, buffer.subarray(at)).written;
    ends.push(at);
  }
  return { bytes: buffer.subarray(0, at), starts, ends };
}

/**
 * The {@linkcode FileSource} of `path` on `fs` (the real file system by default); needs read and
 * write permission on it only. `onLoose` is told when a file it opens is readable or writable by
 * group or others. It never writes through a symbolic link: a link at `path` fails the open.
 */
export function pathSource(
  path: string,
  onLoose: (mode: number) => void,
  fs: StorageFs = denoFs,
): FileSource {
  return {
    async identify() {
      try {
        return fileIdentity(await fs.lstat(path));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return null;
        throw error;
      }
    },
    async open() {
      // Read too: to see whether an earlier run left a torn last line.
      const file = await openNoFollow(fs, path, {
        read: true,
        append: true,
        create: true,
        mode: 0o600,
      });
      try {
        const info = await file.stat();
        if (info.mode !== null && (info.mode & 0o077) !== 0) onLoose(info.mode & 0o777);
        let endsMidLine = false;
        if (info.size > 0) {
          const last = new Uint8Array(1);
          await file.seek(info.size - 1, Deno.SeekMode.Start);
          endsMidLine = (await file.read(last)) === 1 && last[0] !== 0x0a;
        }
        return { file, id: fileIdentity(info), endsMidLine, size: info.size };
      } catch (error) {
        file.close();
        throw error;
      }
    },
  };
}
