/**
 * The file system as contactd's storage uses it: a small interface (open, read, write, sync,
 * rename, stat, remove, lock), so the outbox's rules run against a fake in the tests, which can
 * hold or fail any one call, and {@linkcode denoFs}, the real one, a thin shell over `Deno`.
 *
 * @module
 */
import { directoryOf } from "../common/state_files.ts";
import { describeError, type Logger } from "../log/logger.ts";

/** What storage needs to know of a file: `Deno.FileInfo`'s parts it reads. */
export type StorageFileInfo = Pick<
  Deno.FileInfo,
  "size" | "mode" | "dev" | "ino" | "isFile" | "isSymlink"
>;

/** Options of {@linkcode StorageFs.open}: `Deno.OpenOptions`' parts storage uses. */
export type StorageOpenOptions = Pick<
  Deno.OpenOptions,
  "read" | "write" | "append" | "create" | "createNew" | "truncate" | "mode"
>;

/** An open file: `Deno.FsFile`'s methods storage calls. */
export interface StorageFile {
  read(into: Uint8Array): Promise<number | null>;
  write(bytes: Uint8Array): Promise<number>;
  seek(offset: number, whence: Deno.SeekMode): Promise<number>;
  syncData(): Promise<void>;
  stat(): Promise<StorageFileInfo>;
  /** Takes an advisory exclusive lock without waiting; false when another holder has it. */
  tryLock(exclusive: boolean): Promise<boolean>;
  truncate(length?: number): Promise<void>;
  close(): void;
}

/** The file system, as storage uses it. */
export interface StorageFs {
  open(path: string, options: StorageOpenOptions): Promise<StorageFile>;
  /** What the path itself names (a symbolic link is not followed). */
  lstat(path: string): Promise<StorageFileInfo>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
}

/** Whether something is at `path` (a link included: it is not followed). */
export async function pathPresent(fs: Pick<StorageFs, "lstat">, path: string): Promise<boolean> {
  try {
    await fs.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** The real file system. */
export const denoFs: StorageFs = {
  open: (path, options) => Deno.open(path, options),
  lstat: (path) => Deno.lstat(path),
  rename: (from, to) => Deno.rename(from, to),
  remove: (path) => Deno.remove(path),
};

/**
 * Makes a rename in `path`'s directory durable: opens the directory (read permission on it) and
 * syncs it. Rejects when it cannot; the caller logs it.
 */
export async function syncDirectory(fs: StorageFs, path: string): Promise<void> {
  const directory = await fs.open(directoryOf(path), { read: true });
  try {
    await directory.syncData();
  } finally {
    directory.close();
  }
}

/** `dev:ino` of a file, or `""` where the system has no inode numbers (then never compared). */
export function fileIdentity(info: StorageFileInfo): string {
  return info.ino === null ? "" : `${info.dev}:${info.ino}`;
}

/**
 * Opens `path` for writing without ever writing through a symbolic link, nor creating a file
 * where a link points: a link at `path` (even a dangling one) is refused before the open; a
 * missing file is created exclusively (`createNew`, which never follows a link); and after the
 * open, the path itself must name the file opened (not a link, not another file), else it is
 * closed unwritten and this throws.
 */
export async function openNoFollow(
  fs: StorageFs,
  path: string,
  options: StorageOpenOptions,
): Promise<StorageFile> {
  const file = await _openWithoutLink(fs, path, options);
  try {
    const [opened, named] = [await file.stat(), await fs.lstat(path)];
    if (named.isSymlink || fileIdentity(named) !== fileIdentity(opened)) throw _linkRefused(path);
    return file;
  } catch (error) {
    file.close();
    throw error;
  }
}

async function _openWithoutLink(
  fs: StorageFs,
  path: string,
  options: StorageOpenOptions,
): Promise<StorageFile> {
  let named: StorageFileInfo | undefined;
  try {
    named = await fs.lstat(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  if (named?.isSymlink) throw _linkRefused(path);
  if (named === undefined && options.create === true && options.createNew !== true) {
    try {
      return await fs.open(path, { ...options, createNew: true });
    } catch (error) {
      // Created meanwhile (or a link put there): the ordinary open and its checks decide.
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
  }
  return await fs.open(path, options);
}

function _linkRefused(path: string): Error {
  return new Deno.errors.PermissionDenied(
    `${path} is a symbolic link or was replaced: contactd never writes through a link`,
  );
}

/** Writes all of `bytes` (a write may take fewer). */
export async function writeAll(file: Pick<StorageFile, "write">, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.byteLength) written += await file.write(bytes.subarray(written));
}

/** The bytes of the open `file` from `offset` to its end (read in chunks). */
export async function readFrom(file: StorageFile, offset = 0): Promise<Uint8Array> {
  await file.seek(offset, Deno.SeekMode.Start);
  return await _readRest(file);
}

/** The bytes of `file` from where it is to its end. */
async function _readRest(file: Pick<StorageFile, "read">): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const chunk = new Uint8Array(1 << 16);
    const n = await file.read(chunk);
    if (n === null) break;
    chunks.push(chunk.subarray(0, n));
    size += n;
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) (all.set(chunk, at), at += chunk.byteLength);
  return all;
}

/** The whole file at `path` as UTF-8 text. */
export async function readAllText(fs: StorageFs, path: string): Promise<string> {
  const file = await fs.open(path, { read: true });
  try {
    return new TextDecoder().decode(await _readRest(file));
  } finally {
    file.close();
  }
}

/**
 * The whole file at `path` as UTF-8 text, never read through a symbolic link (a link is refused,
 * as {@linkcode openNoFollow} does); `undefined` when there is no file.
 */
export async function readTextIfPresent(
  fs: StorageFs,
  path: string,
): Promise<string | undefined> {
  let file: StorageFile;
  try {
    file = await openNoFollow(fs, path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  try {
    return new TextDecoder().decode(await readFrom(file));
  } finally {
    file.close();
  }
}

/** Removes what `path` names, if anything (a link is removed, never followed). */
export async function removeIfPresent(fs: StorageFs, path: string): Promise<void> {
  try {
    await fs.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/**
 * After a failed replacement by rename: removes its temporary file at `path`; a failure to is
 * logged under `event` (the next attempt removes it first anyway), never thrown.
 */
export async function removeTemporary(
  fs: StorageFs,
  path: string,
  log: Logger,
  event: string,
): Promise<void> {
  try {
    await removeIfPresent(fs, path);
  } catch (error) {
    log("error", { event, file: path, error: describeError(error) });
  }
}
