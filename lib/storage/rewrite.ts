/**
 * Rewriting the backup file without the lines a rule drops (retention, erasure): the kept lines
 * go to a temporary file beside it (`MESSAGES_FILE.rewrite`, created exclusively, so never
 * through a link), given the file's mode and owner, synced, then renamed over it and the
 * directory synced. A crash or a failure before the rename leaves the old file whole; a failure
 * removes the temporary file. The caller runs it inside the appender's
 * `exclusive` (lib/storage/group_commit.ts), so no line is appended while it reads and renames: lines
 * appended meanwhile wait, then go to the new file (the appender notices the rename).
 *
 * @module
 */
import { rewritePath } from "../common/state_files.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { MAX_LINE_BYTES, READ_CHUNK_BYTES, readLines } from "../common/line_reader.ts";
import {
  denoFs,
  fileIdentity,
  removeIfPresent,
  removeTemporary,
  type StorageFile,
  type StorageFileInfo,
  type StorageFs,
  syncDirectory,
  writeAll,
} from "./file_system.ts";

/** Who owns a file, and its permission bits (`null` where the system has none). */
export interface FileOwner {
  readonly uid: number | null;
  readonly gid: number | null;
  readonly mode: number | null;
}

/** The file system a rewrite needs: storage's, plus a file's owner and mode. */
export interface RewriteFs extends StorageFs {
  /** The owner and mode of what `path` names (a link is not followed). */
  owner(path: string): Promise<FileOwner>;
  chmod(path: string, mode: number): Promise<void>;
  chown(path: string, uid: number, gid: number): Promise<void>;
}

/** The real file system. */
export const denoRewriteFs: RewriteFs = {
  ...denoFs,
  owner: async (path) => {
    const { uid, gid, mode } = await Deno.lstat(path);
    return { uid, gid, mode };
  },
  chmod: (path, mode) => Deno.chmod(path, mode),
  chown: (path, uid, gid) => Deno.chown(path, uid, gid),
};

/** Rejects unless `path` names (lstat, now) the regular file `opened` describes, `dev:ino`. */
export async function assertSameFile(
  fs: StorageFs,
  path: string,
  opened: StorageFileInfo,
): Promise<void> {
  const named = await fs.lstat(path);
  if (named.isSymlink || !named.isFile || fileIdentity(named) !== fileIdentity(opened)) {
    throw new Deno.errors.PermissionDenied(
      `${path} was replaced or is a link: its owner and mode are left alone`,
    );
  }
}

/**
 * Gives the file at `path` to `uid`:`gid`, only when it is not theirs already, and only when
 * `path` still names the file `opened` describes (`dev:ino`, looked at with lstat right before:
 * not a link, not a file swapped in meanwhile by whoever owns the directory); rejects otherwise.
 * `chown` follows links, so this is how contactd run as root never gives away another file.
 */
export async function chownChecked(
  fs: RewriteFs,
  path: string,
  opened: StorageFileInfo,
  uid: number,
  gid: number,
): Promise<void> {
  await assertSameFile(fs, path, opened);
  const now = await fs.owner(path);
  if (now.uid === uid && now.gid === gid) return;
  try {
    await fs.chown(path, uid, gid);
  } catch (error) {
    if (!(error instanceof Deno.errors.PermissionDenied)) throw error;
    throw new Deno.errors.PermissionDenied(
      `cannot give ${path} the owner and group ${uid}:${gid} (${describeError(error)}): the ` +
        "backup file's group must be one of the service user's groups (chgrp it to the " +
        "service's group)",
    );
  }
}

/** What a rewrite did. */
export interface RewriteOutcome {
  /** Lines kept (damaged ones and a torn last line included: a rule drops only what it knows). */
  readonly kept: number;
  /** Lines dropped. */
  readonly removed: number;
}

/**
 * Told what a rewrite removed, and the new file's identity (`dev:ino`, lib/storage/file_system.ts
 * `fileIdentity`), once it is written and synced and before it takes the backup file's place:
 * what is noted of it must be durable before the rename, since a crash right after leaves the
 * file rewritten and a run again finds nothing to remove. A rejection stops the rewrite (the old
 * file stays).
 */
export type BeforeRename = (outcome: RewriteOutcome, identity: string) => Promise<void>;

/** How many bytes of kept lines are gathered before one write to the temporary file. */
const WRITE_BATCH = 1 << 20;

/**
 * Rewrites the backup file at `path` keeping the lines `keep` says to keep (each without its
 * line break; a torn last line is kept, made whole). Streamed (lib/common/line_reader.ts), so
 * memory does not grow with the file: a first pass reads up to the first line that goes (the
 * whole file on a dry run, or when none goes); the second copies the bytes before it as they are
 * and writes every kept line after it, as its bytes, to the temporary file. A line longer than
 * {@linkcode MAX_LINE_BYTES} is damaged: kept, copied without being held, and logged
 * (`backup_line_oversized`, how many). Nothing is written when nothing goes, or with `dryRun`;
 * no file is nothing to do. `beforeRename` is told what goes right before the rename. Rejects,
 * with the old file in place and the temporary file removed, when a step before the rename
 * fails; a failed cleanup (`backup_rewrite_cleanup_failed`) or directory sync
 * (`backup_directory_sync_failed`) is logged.
 */
export async function rewriteBackup(
  fs: RewriteFs,
  path: string,
  keep: (line: string) => boolean,
  log: Logger,
  dryRun = false,
  beforeRename?: BeforeRename,
): Promise<RewriteOutcome> {
  let source: StorageFile;
  try {
    source = await fs.open(path, { read: true });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kept: 0, removed: 0 };
    throw error;
  }
  let open = true;
  // Closed before the rename (a file open under its old name cannot be renamed over everywhere).
  const close = () => open && (open = false, source.close());
  let outcome: _Pass;
  let oversized: number;
  try {
    const first = await _firstToGo(source, keep, dryRun);
    outcome = first;
    oversized = first.oversized;
    if (first.removed > 0 && !dryRun) {
      // The lines the first pass saw before `at` are copied, not read again: counted once.
      outcome = await _replace(
        fs,
        path,
        log,
        (out) => _copyKept(source, out, first.at, keep).finally(close),
        beforeRename,
      );
      oversized += outcome.oversized;
    }
  } finally {
    close();
  }
  if (oversized > 0) {
    log("warn", { event: "backup_line_oversized", lines: oversized, max: MAX_LINE_BYTES });
  }
  return { kept: outcome.kept, removed: outcome.removed };
}

/** What a pass over the file counted. */
interface _Pass extends RewriteOutcome {
  /** Lines over the cap it read past. */
  readonly oversized: number;
}

/** What the first pass found. */
interface _FirstPass extends _Pass {
  /** Where the first line that goes starts; the file's length when none goes. */
  readonly at: number;
}

/** Reads `source` up to the first line that goes, or, `all`, to its end, counting. */
async function _firstToGo(
  source: StorageFile,
  keep: (line: string) => boolean,
  all: boolean,
): Promise<_FirstPass> {
  let kept = 0;
  let removed = 0;
  let oversized = 0;
  let at: number | undefined;
  let end = 0;
  for await (const line of readLines(source)) {
    end = line.whole ? line.end + 1 : line.end;
    // A torn last line is kept whatever it holds: it is not a whole record.
    if (line.text === undefined || !line.whole || keep(line.text)) {
      kept++;
      if (line.text === undefined) oversized++;
      continue;
    }
    removed++;
    at ??= line.start;
    if (!all) break;
  }
  return { kept, removed, oversized, at: at ?? end };
}

/**
 * Writes to `out` the bytes of `source` before `at` as they are, then every line from `at` on
 * that `keep` keeps (a torn last line made whole, a line over the cap copied from the file in
 * chunks); returns the counts.
 */
async function _copyKept(
  source: StorageFile,
  out: StorageFile,
  at: number,
  keep: (line: string) => boolean,
): Promise<_Pass> {
  await source.seek(0, Deno.SeekMode.Start);
  let kept = await _copyRange(source, out, at);
  let removed = 0;
  let oversized = 0;
  const batch = new _Batch(out);
  for await (const line of readLines(source, { start: at })) {
    if (line.text === undefined || line.bytes === undefined) {
      // Read past by the reader: copied from the file, then the reader's place is restored.
      await batch.flush();
      const here = await source.seek(0, Deno.SeekMode.Current);
      await source.seek(line.start, Deno.SeekMode.Start);
      await _copyBytes(source, out, line.end - line.start);
      await source.seek(here, Deno.SeekMode.Start);
      await writeAll(out, NEW_LINE);
      kept++;
      oversized++;
    } else if (!line.whole || keep(line.text)) {
      await batch.add(line.bytes);
      kept++;
    } else {
      removed++;
    }
  }
  await batch.flush();
  return { kept, removed, oversized };
}

const NEW_LINE = new Uint8Array([10]);

/** Kept lines gathered for fewer, larger writes. */
class _Batch {
  readonly #out: StorageFile;
  readonly #bytes = new Uint8Array(WRITE_BATCH);
  #length = 0;

  constructor(out: StorageFile) {
    this.#out = out;
  }

  /** Adds one line and its line break. */
  async add(line: Uint8Array): Promise<void> {
    if (this.#length + line.byteLength + 1 > this.#bytes.byteLength) await this.flush();
    if (line.byteLength + 1 > this.#bytes.byteLength) {
      await writeAll(this.#out, line);
      await writeAll(this.#out, NEW_LINE);
      return;
    }
    this.#bytes.set(line, this.#length);
    this.#bytes[this.#length + line.byteLength] = 10;
    this.#length += line.byteLength + 1;
  }

  /** Writes what was gathered. */
  async flush(): Promise<void> {
    if (this.#length === 0) return;
    await writeAll(this.#out, this.#bytes.subarray(0, this.#length));
    this.#length = 0;
  }
}

/** Copies the first `length` bytes of `source` (from its start) to `out`; how many lines. */
async function _copyRange(source: StorageFile, out: StorageFile, length: number): Promise<number> {
  let lines = 0;
  await _copyBytes(source, out, length, (chunk) => {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  });
  return lines;
}

/** Copies `length` bytes from where `source` is to `out`, in chunks, each shown to `seen`. */
async function _copyBytes(
  source: StorageFile,
  out: StorageFile,
  length: number,
  seen?: (chunk: Uint8Array) => void,
): Promise<void> {
  const chunk = new Uint8Array(READ_CHUNK_BYTES);
  let left = length;
  while (left > 0) {
    const n = await source.read(chunk.subarray(0, Math.min(chunk.byteLength, left)));
    if (n === null || n === 0) throw new Deno.errors.UnexpectedEof(`the file ended early`);
    seen?.(chunk.subarray(0, n));
    await writeAll(out, chunk.subarray(0, n));
    left -= n;
  }
}

/**
 * The durable replacement of `path`: the temporary file beside it (removed first, created
 * exclusively, given `path`'s owner and mode), written by `fill`, synced, renamed over `path`,
 * the directory synced; returns what `fill` did.
 */
async function _replace<T extends RewriteOutcome>(
  fs: RewriteFs,
  path: string,
  log: Logger,
  fill: (out: StorageFile) => Promise<T>,
  beforeRename?: BeforeRename,
): Promise<T> {
  const owner = await fs.owner(path);
  const temporary = rewritePath(path);
  await removeIfPresent(fs, temporary); // left by a crash, or put there: never followed
  const out = await fs.open(temporary, { write: true, createNew: true, mode: 0o600 });
  let outcome: T;
  try {
    try {
      if (owner.uid !== null && owner.gid !== null) {
        // Refused (a group the service is not in): the caller's one failure line says why.
        await chownChecked(fs, temporary, await out.stat(), owner.uid, owner.gid);
      }
      if (owner.mode !== null) {
        await assertSameFile(fs, temporary, await out.stat());
        await fs.chmod(temporary, owner.mode & 0o7777);
      }
      outcome = await fill(out);
      await out.syncData();
      if (beforeRename !== undefined) {
        await beforeRename(
          { kept: outcome.kept, removed: outcome.removed },
          fileIdentity(await out.stat()),
        );
      }
    } finally {
      out.close();
    }
    await fs.rename(temporary, path);
  } catch (error) {
    await removeTemporary(fs, temporary, log, "backup_rewrite_cleanup_failed");
    throw error;
  }
  try {
    await syncDirectory(fs, path);
  } catch (error) {
    log("error", { event: "backup_directory_sync_failed", error: describeError(error) });
  }
  return outcome;
}
