/**
 * One service per `MESSAGES_FILE`: an exclusive advisory lock on a lock file beside it
 * (`MESSAGES_FILE.lock`), taken before anything else is read or written and held until the
 * service stops (the system releases it if the process dies). The holder writes its process id
 * into the file, so a second service is refused with one line naming the file and the holder.
 *
 * @module
 */
import { lockPath } from "../common/state_files.ts";
import { denoFs, openNoFollow, type StorageFile, type StorageFs, writeAll } from "./file_system.ts";

/** A second service asked for files another one holds. */
export class FilesLocked extends Error {
  /** The lock file. */
  readonly file: string;
  /** The holder's process id as it wrote it, when it could be read. */
  readonly holder: string | undefined;

  constructor(file: string, holder: string | undefined) {
    super(
      `${file} is locked by another contactd` +
        (holder === undefined ? "" : ` (process ${holder})`) +
        ": only one service may use MESSAGES_FILE and the files beside it; stop the other first",
    );
    this.name = "FilesLocked";
    this.file = file;
    this.holder = holder;
  }
}

/** The lock a running service holds; releasing it lets the next one start. */
export interface FilesLock extends Disposable {
  /** The lock file. */
  readonly file: string;
  /** Releases the lock (closes the file); later calls do nothing. */
  release(): void;
}

/**
 * Takes the exclusive lock for `messagesFile` without waiting, writing `pid` into the lock file
 * (created 0600; never through a symbolic link). Throws {@linkcode FilesLocked} when another
 * process holds it.
 */
export async function lockFiles(
  messagesFile: string,
  pid: number,
  fs: StorageFs = denoFs,
): Promise<FilesLock> {
  const file = lockPath(messagesFile);
  const handle = await openNoFollow(fs, file, {
    read: true,
    write: true,
    create: true,
    mode: 0o600,
  });
  try {
    if (!await handle.tryLock(true)) throw new FilesLocked(file, await _holder(handle));
    await handle.truncate(0);
    await handle.seek(0, Deno.SeekMode.Start);
    await writeAll(handle, new TextEncoder().encode(`${pid}\n`));
  } catch (error) {
    handle.close(); // closing releases the lock if it was taken
    throw error;
  }
  let open = true;
  const release = () => {
    if (!open) return;
    open = false;
    handle.close();
  };
  return { file, release, [Symbol.dispose]: release };
}

/**
 * Whether a running service holds the lock of `messagesFile`, found without taking the lock nor
 * creating the file: the holder (its process id as it wrote it, when readable), or `undefined`
 * when no process holds it or there is no lock file. For commands that must tell the operator
 * the service is running (`chat-id`: the service consumes the chat's updates).
 */
export async function lockHolder(
  messagesFile: string,
  fs: StorageFs = denoFs,
): Promise<{ readonly pid: string | undefined } | undefined> {
  let handle: StorageFile;
  try {
    handle = await openNoFollow(fs, lockPath(messagesFile), { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  try {
    // Taken here, it was free: closing the file releases it at once.
    return await handle.tryLock(true) ? undefined : { pid: await _holder(handle) };
  } finally {
    handle.close();
  }
}

/** The process id the holder wrote, if it is one. */
async function _holder(handle: StorageFile): Promise<string | undefined> {
  try {
    await handle.seek(0, Deno.SeekMode.Start);
    const bytes = new Uint8Array(32);
    const n = await handle.read(bytes);
    const text = new TextDecoder().decode(bytes.subarray(0, n ?? 0)).trim();
    return /^\d+$/.test(text) ? text : undefined;
  } catch {
    // The holder is named when it can be; the refusal stands either way.
    return undefined;
  }
}
