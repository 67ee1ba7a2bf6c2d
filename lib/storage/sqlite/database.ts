/**
 * Opening contactd's SQLite database (`node:sqlite`, built into Deno): created 0600 before SQLite
 * touches it (its `-wal` and `-shm` files then take the same mode), never through a symbolic link
 * (a link at the path is refused, a missing file is created exclusively, and after the open the
 * path must still name the file that was checked), then set up (WAL, `synchronous=FULL`, a busy
 * timeout, `secure_delete`, temporary tables in memory), checked (`quick_check`) and migrated
 * (lib/storage/sqlite/schema.ts).
 *
 * Everything here is synchronous: it runs in the store's worker (lib/storage/sqlite/worker.ts),
 * or in a command, never on the service's HTTP thread. This folder's modules import nothing but
 * each other and `node:`/`Deno` built-ins: the worker's module graph is this folder, which the
 * permission flags grant read access to.
 *
 * @module
 */
import { backup, DatabaseSync } from "node:sqlite";
import { migrate, SCHEMA_VERSION, schemaVersion } from "./schema.ts";

/** How long a write waits for another connection's write (a command, the service) to finish. */
export const BUSY_TIMEOUT_MS = 10_000;

/** Why the database was refused; each has its own log event and hint. */
export type DatabaseRefusal =
  /** A symbolic link at the path, or the path was replaced while it was opened. */
  | "link"
  /** Not a regular file. */
  | "not_file"
  /** `quick_check` found damage. */
  | "damaged"
  /** Written by a newer contactd (its schema version is higher than this one knows). */
  | "newer"
  /** Held by a running service (its lock on the file: {@linkcode OpenDatabaseOptions.hold}). */
  | "held";

/** The database cannot be used as it is; nothing was written to it. */
export class DatabaseRefused extends Error {
  /** What is wrong. */
  readonly reason: DatabaseRefusal;
  /** The database file. */
  readonly path: string;

  constructor(reason: DatabaseRefusal, path: string, detail: string) {
    super(`${path}: ${detail}`);
    this.name = "DatabaseRefused";
    this.reason = reason;
    this.path = path;
  }
}

/** Options of {@linkcode openDatabase}. */
export interface OpenDatabaseOptions {
  /** Create the file when it is missing (the service); a command without it finds none. */
  readonly create: boolean;
  /**
   * Hold the file for this process (the service): an exclusive `flock` on a descriptor of its own,
   * taken before SQLite opens it and kept until {@linkcode OpenedDatabase.hold} is closed, after
   * the connection. A second service is refused (`held`) even when `MESSAGES_FILE.lock` was
   * removed under the first. (`flock` and SQLite's `fcntl` locks do not meet on Linux; the
   * descriptor must outlive the connection, since closing any descriptor of a file drops the
   * process's `fcntl` locks on it.)
   */
  readonly hold?: boolean;
}

/** An open database and what was found when it was opened. */
export interface OpenedDatabase {
  readonly db: DatabaseSync;
  /** The file's device and inode as opened, to notice it removed or replaced under the service. */
  readonly identity: string;
  /** The file's permission bits (`0o600` when contactd created it). */
  readonly mode: number;
  /** Created by this open. */
  readonly created: boolean;
  /** The schema version before this open migrated it (0: new). */
  readonly fromVersion: number;
  /** The held descriptor, when asked for: close it after the connection, never before. */
  readonly hold: Deno.FsFile | undefined;
}

/**
 * Opens the database at `path`. Throws {@linkcode DatabaseRefused} for a link, a file that is not
 * regular, damage or a newer schema; `Deno.errors.NotFound` when it is missing and `create` is
 * false; other errors as the system gave them.
 */
export function openDatabase(path: string, options: OpenDatabaseOptions): OpenedDatabase {
  const { info, created } = _checkedFile(path, options.create);
  // Before SQLite opens the file: closing this descriptor is harmless only while no connection
  // of this process has it open.
  const hold = options.hold === true ? _hold(path, info) : undefined;
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path);
  } catch (error) {
    hold?.close();
    throw error;
  }
  try {
    // The path must still name the file checked: a link or another file put there meanwhile is
    // refused before anything is written.
    const now = Deno.lstatSync(path);
    if (now.isSymlink || now.dev !== info.dev || now.ino !== info.ino) {
      throw new DatabaseRefused("link", path, "was replaced while it was opened");
    }
    _configure(db);
    const check = db.prepare("PRAGMA quick_check").all().map((row) => String(row.quick_check));
    if (check.length !== 1 || check[0] !== "ok") {
      throw new DatabaseRefused("damaged", path, `quick_check failed: ${check.slice(0, 3)}`);
    }
    const fromVersion = schemaVersion(db);
    if (fromVersion > SCHEMA_VERSION) {
      throw new DatabaseRefused(
        "newer",
        path,
        `schema version ${fromVersion} was written by a newer contactd (this one knows ` +
          `${SCHEMA_VERSION}); downgrading is not supported: run the newer release`,
      );
    }
    migrate(db, fromVersion);
    return {
      db,
      identity: `${info.dev}:${info.ino}`,
      mode: (info.mode ?? 0o600) & 0o777,
      created,
      fromVersion,
      hold,
    };
  } catch (error) {
    db.close();
    hold?.close();
    throw error;
  }
}

/**
 * Whether a running service holds the database at `path` (see `hold`); false when none is there.
 * Ask before this process opens the database itself, never while it has it open: the
 * descriptor it asks with is closed, and closing any descriptor of a file drops the process's
 * `fcntl` locks on it, SQLite's included.
 */
export function databaseHeld(path: string): boolean {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
  if (!info.isFile) return false;
  try {
    _hold(path, info).close();
    return false;
  } catch (error) {
    if (error instanceof DatabaseRefused && error.reason === "held") return true;
    throw error;
  }
}

/** An exclusive `flock` on `path` (the file `info` describes), or `held` when another has it. */
function _hold(path: string, info: Deno.FileInfo): Deno.FsFile {
  const file = Deno.openSync(path, { read: true });
  try {
    const opened = file.statSync();
    if (opened.dev !== info.dev || opened.ino !== info.ino) {
      throw new DatabaseRefused("link", path, "was replaced while it was opened");
    }
    if (!file.tryLockSync(true)) {
      throw new DatabaseRefused(
        "held",
        path,
        "is held by another contactd: only one service may use it; stop the other first",
      );
    }
    return file;
  } catch (error) {
    file.close();
    throw error;
  }
}

/** Runs `work` in one write transaction (`BEGIN IMMEDIATE`), rolled back when it throws. */
export function inTransaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = work();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

/**
 * Moves the write-ahead log into the database file and empties it, so that deleted rows'
 * text (overwritten by `secure_delete`) is gone from both files. Throws when a reader kept it from
 * finishing (`busy`), so an erasure is never reported done while the old pages remain.
 */
export function checkpoint(db: DatabaseSync): void {
  const row = db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get();
  if (row === undefined || Number(row.busy) !== 0) {
    throw new Error("wal_checkpoint(TRUNCATE) could not finish: another connection is reading");
  }
}

/**
 * What the path names now, against the file opened (`identity`): `same`; `missing` (removed,
 * or its directory is); or `other` (a link or another file put there, or a link at its `-wal` or
 * `-shm`).
 */
export function pathState(path: string, identity: string): "same" | "missing" | "other" {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "missing";
    throw error;
  }
  if (info.isSymlink || `${info.dev}:${info.ino}` !== identity) return "other";
  try {
    _checkCompanions(path);
  } catch (error) {
    if (error instanceof DatabaseRefused) return "other";
    throw error;
  }
  return "same";
}

/**
 * SQLite opens `-wal` and `-shm` beside the database by their names, following a link there:
 * one that is a link, or not a regular file, is refused (while they are missing SQLite makes
 * them, with the database's mode).
 */
function _checkCompanions(path: string): void {
  for (const companion of [`${path}-wal`, `${path}-shm`]) {
    let info: Deno.FileInfo;
    try {
      info = Deno.lstatSync(companion);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      throw error;
    }
    if (info.isSymlink || !info.isFile) {
      throw new DatabaseRefused(
        "link",
        companion,
        "is a symbolic link or not a regular file: contactd never writes through one",
      );
    }
  }
}

/**
 * Writes the whole database `db` (opened from a file since removed) to a new file at `path`,
 * created 0600 and exclusively (never through a link), so nothing it held is lost when its
 * file was removed under the service; the caller then opens `path` instead. (`node:sqlite`'s
 * online backup: `VACUUM INTO` needs `ATTACH`, which Deno forbids under narrow permissions.)
 */
export async function copyTo(db: DatabaseSync, path: string): Promise<void> {
  Deno.openSync(path, { write: true, createNew: true, mode: 0o600 }).close();
  try {
    await backup(db, path);
  } catch (error) {
    Deno.removeSync(path);
    throw error;
  }
}

function _configure(db: DatabaseSync): void {
  db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  const mode = db.prepare("PRAGMA journal_mode = WAL").get();
  if (mode === undefined || String(mode.journal_mode).toLowerCase() !== "wal") {
    throw new Error("the database could not be put in WAL mode");
  }
  db.exec(
    "PRAGMA synchronous = FULL; PRAGMA secure_delete = ON; PRAGMA temp_store = MEMORY; " +
      "PRAGMA foreign_keys = ON; PRAGMA trusted_schema = OFF",
  );
}

/** The file at `path`, created 0600 when missing and asked for, checked to be no link. */
function _checkedFile(path: string, create: boolean): { info: Deno.FileInfo; created: boolean } {
  let created = false;
  let info: Deno.FileInfo | undefined;
  try {
    info = Deno.lstatSync(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound) || !create) throw error;
  }
  if (info === undefined) {
    try {
      // Exclusive: never follows a link, never takes a file made meanwhile for its own.
      Deno.openSync(path, { write: true, createNew: true, mode: 0o600 }).close();
      created = true;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
    }
    info = Deno.lstatSync(path);
  }
  if (info.isSymlink) {
    throw new DatabaseRefused("link", path, "is a symbolic link: contactd never opens one");
  }
  if (!info.isFile) throw new DatabaseRefused("not_file", path, "is not a regular file");
  _checkCompanions(path);
  return { info, created };
}
