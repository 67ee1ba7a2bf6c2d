/**
 * The one-time import of the files an older release (up to 6c90727) kept beside `MESSAGES_FILE`
 * into the database, at the service's start: the outbox (pending entries with their tries, errors
 * and times; unrecorded ones stay unrecorded, for recovery), the chat ledger (entries, parts,
 * states, deletions waiting), the block list (live blocks), the replies (waiting ones and audits)
 * and the updates offset (with its bot).
 *
 * Every file not yet imported is read with its old read-only parser (lib/upgrade/_old_files.ts;
 * damaged lines are logged, `import_lines_skipped`, and skipped as the old readers skipped them),
 * and ALL of them go into the database in ONE transaction together with their `imports` rows; a
 * file marked there is never read again. Only after the commit are the old files (and their
 * leftover temporary files) removed; a file a crash left after the commit is removed at the next
 * start without being read (`import_leftover_removed`). A failure before the commit writes
 * nothing and removes nothing: the caller stops, the files stay for the next try.
 *
 * @module
 */
import { formatTimestamp } from "../common/timestamp.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { denoFs, type StorageFs } from "../storage/file_system.ts";
import { call, type Store, type StoreCall } from "../storage/store.ts";
import { OLD_FILES, type OldFile } from "./_old_files.ts";

/** Options of {@linkcode importFiles}. */
export interface ImportOptions {
  /** The file system (default: the real one). */
  readonly fs?: StorageFs;
  /** The wall clock, ms since the epoch (default `Date.now`). */
  readonly now?: () => number;
}

/** Files of an older release that hold nothing to import, removed with the others. */
export const STALE_SUFFIXES: readonly string[] = [".forget", ".forget.answer"];

/** What {@linkcode importFiles} did. */
export interface ImportReport {
  /** Rows imported, by old file (its suffix: `.outbox`, `.chat`, …); none when nothing was. */
  readonly imported: Readonly<Record<string, number>>;
  /** The old files removed (imported now, or imported before and left by a crash). */
  readonly removed: readonly string[];
}

/**
 * Imports the old files beside `messagesFile` into `store` (see the module's description), then
 * removes them. Rejects, writing nothing, when a file cannot be read (a symbolic link at an old
 * path is refused) or the transaction fails; a removal that fails is logged
 * (`import_remove_failed`) and tried again at the next start.
 */
export async function importFiles(
  store: Store,
  messagesFile: string,
  log: Logger,
  options: ImportOptions = {},
): Promise<ImportReport> {
  const fs = options.fs ?? denoFs;
  const now = (options.now ?? Date.now)();
  const done = new Set((await store.run("imports.list", undefined)).map((row) => row.file));
  const calls: StoreCall[] = [];
  const imported: Record<string, number> = {};
  const toRemove: OldFile[] = [];
  for (const old of OLD_FILES) {
    const present = await _present(fs, old.path(messagesFile));
    if (done.has(old.suffix)) {
      if (present) log("warn", { event: "import_leftover_removed", file: old.suffix });
      toRemove.push(old);
      continue;
    }
    if (!present) {
      toRemove.push(old); // a temporary file alone is a rewrite that never finished
      continue;
    }
    const read = await old.read({ messagesFile, fs, log, now });
    if (read.skipped > 0) {
      log("warn", { event: "import_lines_skipped", file: old.suffix, lines: read.skipped });
    }
    calls.push(...read.calls);
    calls.push(call("imports.done", {
      file: old.suffix,
      at: formatTimestamp(new Date(now)),
      rows: read.rows,
    }));
    imported[old.suffix] = read.rows;
    toRemove.push(old);
  }
  if (Object.keys(imported).length > 0) {
    await store.transaction(calls);
    // One field per file (`outbox`, `chat`, …): its rows.
    const rows = Object.entries(imported).map(([suffix, n]) => [suffix.slice(1), n]);
    log("info", { event: "import_done", ...Object.fromEntries(rows) });
  }
  const removed: string[] = [];
  const paths = toRemove.flatMap((old) => [old.path(messagesFile), old.temporary(messagesFile)]);
  // A forget request (and its answer) an older command left as files: requests now go through
  // the database, and what it named to forget is personal data.
  paths.push(...STALE_SUFFIXES.map((suffix) => `${messagesFile}${suffix}`));
  for (const path of paths) {
    if (await _remove(fs, path, path.slice(messagesFile.length), log)) removed.push(path);
  }
  return { imported, removed };
}

/**
 * Whether a file of an older release is beside `messagesFile` (not imported yet, or left by a
 * crash after its import): the service's next start imports it.
 */
export async function oldFilesPresent(
  messagesFile: string,
  fs: StorageFs = denoFs,
): Promise<boolean> {
  for (const old of OLD_FILES) {
    try {
      await fs.lstat(old.path(messagesFile));
      return true;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
  return false;
}

/** Whether `path` names a file; a symbolic link there is refused (never read through one). */
async function _present(fs: StorageFs, path: string): Promise<boolean> {
  try {
    const info = await fs.lstat(path);
    if (info.isSymlink) throw new Error(`${path} is a symbolic link: not imported`);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Removes `path`; true when it was there. A failure is logged, and left for the next start. */
async function _remove(
  fs: StorageFs,
  path: string,
  suffix: string,
  log: Logger,
): Promise<boolean> {
  try {
    await fs.remove(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    log("error", {
      event: "import_remove_failed",
      file: suffix,
      error: describeError(error),
    });
    return false;
  }
}
