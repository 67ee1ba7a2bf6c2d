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
  // 2: the learned spam filter, attachments and case pages.
  `
  -- (spam filter: issue 31)
  -- The learned filter's model: per token, how many spam and not-spam examples held it and the
  -- day (since the epoch) one last taught it; the examples' totals; and per submission, until
  -- RETENTION or its erasure, its distinct tokens and the label a press taught (NULL: none), so
  -- an undone press and forget subtract exactly what it taught.
  CREATE TABLE spam_tokens (
    token TEXT PRIMARY KEY,
    spam INTEGER NOT NULL CHECK (spam >= 0),
    ham INTEGER NOT NULL CHECK (ham >= 0),
    seen INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX spam_tokens_seen ON spam_tokens (seen);
  CREATE TABLE spam_totals (
    label TEXT PRIMARY KEY CHECK (label IN ('spam', 'ham')),
    examples INTEGER NOT NULL CHECK (examples >= 0)
  ) STRICT;
  INSERT INTO spam_totals (label, examples) VALUES ('spam', 0), ('ham', 0);
  CREATE TABLE spam_lessons (
    submission TEXT PRIMARY KEY,
    ts TEXT NOT NULL,
    label TEXT CHECK (label IN ('spam', 'ham')),
    tokens TEXT NOT NULL
  ) STRICT;
  CREATE INDEX spam_lessons_ts ON spam_lessons (ts);
  -- What SPAM_FILTER=hold kept out of the chat, until released, RETENTION or its erasure: the
  -- submission as the outbox keeps it, to be sent when the owner releases it.
  CREATE TABLE spam_held (
    id TEXT PRIMARY KEY,
    ts TEXT NOT NULL,
    form TEXT,
    score REAL NOT NULL,
    submission TEXT NOT NULL
  ) STRICT;
  CREATE INDEX spam_held_ts ON spam_held (ts);

  -- (attachments: issue 32)
  -- The files sent with a submission (kept in MESSAGES_FILE.files/ under "stored"), from its
  -- acceptance until RETENTION or its erasure: the record's label, size, type and sha256, and
  -- their way to the chat: waiting, sent (its message), or refused by Telegram (the error).
  CREATE TABLE files (
    submission TEXT NOT NULL,
    idx INTEGER NOT NULL,
    ts TEXT NOT NULL,
    form TEXT,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    type TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    stored TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'sent', 'refused')),
    chat INTEGER,
    message INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    silent INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (submission, idx)
  ) STRICT;
  CREATE INDEX files_waiting ON files (state, ts);
  CREATE INDEX files_ts ON files (ts);

  -- (case pages: issue 33)
  CREATE TABLE cases (
    id TEXT PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE,
    ts TEXT NOT NULL,
    form TEXT
  ) STRICT;
  CREATE INDEX cases_ts ON cases (ts);
  CREATE TABLE case_posts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    case_id TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    ref TEXT NOT NULL UNIQUE,
    ts TEXT NOT NULL,
    author TEXT NOT NULL CHECK (author IN ('sender', 'owner')),
    text TEXT NOT NULL
  ) STRICT;
  CREATE INDEX case_posts_case ON case_posts (case_id, seq);
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
