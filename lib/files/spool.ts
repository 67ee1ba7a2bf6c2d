/**
 * Where received files are kept: a directory beside the backup file (`MESSAGES_FILE.files/`,
 * created `0700`), each file created `0600`, exclusively (never over an existing file, never
 * through a link), under a name contactd chooses; the sender's name is only a label.
 *
 * @module
 */

/** One file being written. */
export interface SpoolWriter {
  /** Appends `bytes`; settles once they are handed to the file. */
  write(bytes: Uint8Array): Promise<void>;
  /** Flushes the file to disk and closes it. */
  close(): Promise<void>;
  /** Closes the file without syncing (before it is removed). */
  abandon(): void;
}

/** The files of submissions, by the names contactd gave them. */
export interface Spool {
  /** Creates `name` exclusively, `0600`. */
  create(name: string): Promise<SpoolWriter>;
  /** Removes `name`; a missing file is not an error. */
  remove(name: string): Promise<void>;
  /** The path of `name`, to read it back (sending, export). */
  path(name: string): string;
  /** The names of the files it holds. */
  list(): Promise<string[]>;
  /** Renames `from` to `to` (within the spool; `to` replaced if present). */
  rename(from: string, to: string): Promise<void>;
}

export { filesDirectory } from "../common/state_files.ts";

/** A name contactd may give a spooled file: letters, digits, `-` and `_`, nothing else. */
export const SPOOL_NAME = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Removes files of the spool in `directory` by name, without opening it (a command, which must
 * not create the directory); a missing file or directory is not an error.
 */
export function spoolRemover(directory: string): Pick<Spool, "remove"> {
  return {
    async remove(name) {
      if (!SPOOL_NAME.test(name)) throw new Error(`not a spool name: ${name}`);
      try {
        await Deno.remove(`${directory}/${name}`);
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    },
  };
}

/**
 * Opens (creating it `0700` when missing) the directory `directory` as a {@linkcode Spool}. A
 * path that is a link, or not a directory, is refused; an existing directory is narrowed to
 * `0700` if it was wider.
 */
export async function openSpool(directory: string): Promise<Spool> {
  try {
    await Deno.mkdir(directory, { mode: 0o700 });
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
  }
  const info = await Deno.lstat(directory);
  if (info.isSymlink || !info.isDirectory) {
    throw new Error(`${directory} is not a directory (a link is never followed)`);
  }
  if (info.mode !== null && (info.mode & 0o077) !== 0) await Deno.chmod(directory, 0o700);
  const pathOf = (name: string) => {
    if (!SPOOL_NAME.test(name)) throw new Error(`not a spool name: ${name}`);
    return `${directory}/${name}`;
  };
  return {
    path: pathOf,
    rename: (from, to) => Deno.rename(pathOf(from), pathOf(to)),
    async list() {
      const names: string[] = [];
      for await (const entry of Deno.readDir(directory)) {
        if (entry.isFile && SPOOL_NAME.test(entry.name)) names.push(entry.name);
      }
      return names.sort();
    },
    async create(name) {
      // createNew: O_EXCL, which never follows a link nor opens an existing file.
      const file = await Deno.open(pathOf(name), { write: true, createNew: true, mode: 0o600 });
      return {
        async write(bytes) {
          let at = 0;
          while (at < bytes.length) at += await file.write(bytes.subarray(at));
        },
        async close() {
          try {
            await file.syncData();
          } finally {
            file.close();
          }
        },
        abandon() {
          try {
            file.close();
          } catch {
            // Already closed.
          }
        },
      };
    },
    async remove(name) {
      try {
        await Deno.remove(pathOf(name));
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    },
  };
}
