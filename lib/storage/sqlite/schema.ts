/**
 * The database's schema as forward migrations: migration `n` (1-based) takes the database from
 * schema version `n - 1` to `n` (`PRAGMA user_version`), each in its own transaction with the
 * version it sets, so a crash leaves the database at one version or the next, never between.
 * A database of a higher version than this release knows was written by a newer contactd:
 * refused, since downgrading is not supported (docs/data.md). CONTRIBUTING.md describes the
 * tables; add a migration, never edit one that has shipped.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";

/** The migrations, in order; the schema version is their count. */
export const MIGRATIONS: readonly string[] = [
  // 1: the state that lived in the files beside MESSAGES_FILE before the database.
  `
  CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    ts TEXT NOT NULL,
    form TEXT,
    submission TEXT NOT NULL,
    recorded INTEGER NOT NULL DEFAULT 0,
    status INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    first_error TEXT,
    last_error TEXT,
    last_ts TEXT,
    done TEXT CHECK (done IN ('delivered', 'given_up'))
  ) STRICT;
  CREATE INDEX outbox_waiting ON outbox (done, seq);

  CREATE TABLE chat_entries (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    chat INTEGER NOT NULL,
    form TEXT,
    ip TEXT NOT NULL,
    contact TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'handled', 'spam')),
    by_id INTEGER,
    by_name TEXT,
    at TEXT
  ) STRICT;
  CREATE INDEX chat_entries_order ON chat_entries (seq);
  CREATE TABLE chat_parts (
    chat INTEGER NOT NULL,
    message INTEGER NOT NULL,
    entry TEXT NOT NULL REFERENCES chat_entries (id) ON DELETE CASCADE,
    first INTEGER NOT NULL,
    PRIMARY KEY (chat, message)
  ) STRICT;
  CREATE INDEX chat_parts_entry ON chat_parts (entry);
  CREATE TABLE chat_deletions (
    chat INTEGER NOT NULL,
    message INTEGER NOT NULL,
    PRIMARY KEY (chat, message)
  ) STRICT;

  CREATE TABLE blocks (
    kind TEXT NOT NULL CHECK (kind IN ('address', 'contact')),
    value TEXT NOT NULL,
    submission TEXT NOT NULL,
    since TEXT NOT NULL,
    until TEXT NOT NULL,
    by_id INTEGER,
    PRIMARY KEY (kind, value, submission)
  ) STRICT;
  CREATE INDEX blocks_submission ON blocks (submission);

  CREATE TABLE replies (
    id TEXT PRIMARY KEY,
    submission TEXT,
    ts TEXT NOT NULL,
    chat INTEGER NOT NULL,
    message INTEGER NOT NULL,
    topic INTEGER,
    draft TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    result TEXT CHECK (result IN ('sent', 'given_up')),
    done TEXT,
    masked TEXT,
    reason TEXT,
    CHECK ((result IS NULL) = (done IS NULL)),
    CHECK (result IS NOT NULL OR (draft IS NOT NULL AND submission IS NOT NULL))
  ) STRICT;
  CREATE INDEX replies_submission ON replies (submission);
  CREATE INDEX replies_ts ON replies (ts);
  CREATE INDEX replies_waiting ON replies (result, ts);

  CREATE TABLE reply_sources (
    id TEXT PRIMARY KEY,
    ts TEXT NOT NULL,
    form TEXT,
    contact TEXT NOT NULL,
    message TEXT,
    subject TEXT
  ) STRICT;
  CREATE INDEX reply_sources_ts ON reply_sources (ts);

  CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;

  CREATE TABLE requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'working', 'done', 'failed')),
    answer TEXT,
    created TEXT NOT NULL
  ) STRICT;

  CREATE TABLE imports (
    file TEXT PRIMARY KEY,
    at TEXT NOT NULL,
    rows INTEGER NOT NULL
  ) STRICT;
  `,
];

/** The schema version this release writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings `db` from version `from` (at most {@linkcode SCHEMA_VERSION}: the caller refuses a newer
 * one) to {@linkcode SCHEMA_VERSION}.
 */
export function migrate(db: DatabaseSync, from: number): void {
  for (let version = from + 1; version <= SCHEMA_VERSION; version++) {
    db.exec("BEGIN IMMEDIATE");
    try {
      // Another process may have migrated meanwhile: the lock taken by BEGIN IMMEDIATE decides.
      if (schemaVersion(db) < version) {
        db.exec(MIGRATIONS[version - 1]!);
        db.exec(`PRAGMA user_version = ${version}`);
      }
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw error;
    }
  }
}

/** The database's schema version (`PRAGMA user_version`; 0 for a new file). */
export function schemaVersion(db: DatabaseSync): number {
  return Number(db.prepare("PRAGMA user_version").get()?.user_version ?? 0);
}
