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
import {
  denoFs,
  fileIdentity,
  readAllText,
  removeIfPresent,
  removeTemporary,
  type StorageFileInfo,
  type StorageFs,
  syncDirectory,
  writeAll,
} from "./file_system.ts";
import { splitLines } from "./records.ts";

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

const encoder = new TextEncoder();

/**
 * Rewrites the backup file at `path` keeping the lines `keep` says to keep (each without its
 * line break; a torn last line is kept, made whole). Nothing is written when nothing goes, or
 * with `dryRun`; no file is nothing to do. Rejects, with the old file in place and the temporary
 * file removed, when a step before the rename fails; a failed cleanup
 * (`backup_rewrite_cleanup_failed`) or directory sync (`backup_directory_sync_failed`) is logged.
 */
export async function rewriteBackup(
  fs: RewriteFs,
  path: string,
  keep: (line: string) => boolean,
  log: Logger,
  dryRun = false,
): Promise<RewriteOutcome> {
  let text: string;
  try {
    text = await readAllText(fs, path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { kept: 0, removed: 0 };
    throw error;
  }
  const { lines, partial } = splitLines(text);
  const kept = lines.filter(keep);
  if (partial !== "") kept.push(partial);
  const removed = lines.length + (partial === "" ? 0 : 1) - kept.length;
  if (removed === 0 || dryRun) return { kept: kept.length, removed };

  const owner = await fs.owner(path);
  const temporary = rewritePath(path);
  await removeIfPresent(fs, temporary); // left by a crash, or put there: never followed
  const out = await fs.open(temporary, { write: true, createNew: true, mode: 0o600 });
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
      await writeAll(out, encoder.encode(kept.map((line) => `${line}\n`).join("")));
      await out.syncData();
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
  return { kept: kept.length, removed };
}
