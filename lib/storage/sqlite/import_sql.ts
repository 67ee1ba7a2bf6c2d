/**
 * The one-time import of an older release's files (lib/upgrade/import_files.ts): the `imports`
 * table, one row per old file imported (its name beside `MESSAGES_FILE`, e.g. `.outbox`), written
 * in the same transaction as the file's rows, so a file is imported once or not at all; and the
 * inserts the other tables' operations have no form for (a chat entry with its parts and state
 * as the old ledger kept them). Every insert is by id and leaves a row already there as it is.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";
import type { ChatEntryRow } from "./ledger_sql.ts";

/** An old file imported: which (its suffix), when, and how many rows it gave. */
export interface ImportRow {
  readonly file: string;
  readonly at: string;
  readonly rows: number;
}

/** A chat entry of the old ledger, its parts in the order sent. */
export type ChatEntryImport = ChatEntryRow;

/** The import's operations (lib/storage/sqlite/operations.ts). */
export const IMPORT_OPS = {
  /** The old files imported so far, in the order imported. */
  "imports.list"(db: DatabaseSync): ImportRow[] {
    return prepared(db, "SELECT file, at, rows FROM imports ORDER BY at, file").all()
      .map((row) => ({ file: String(row.file), at: String(row.at), rows: Number(row.rows) }));
  },
  /**
   * Marks `file` imported. Throws when it is marked already (its transaction then rolls back
   * whole): a file is never imported twice, even by two imports at once.
   */
  "imports.done"(db: DatabaseSync, row: ImportRow): void {
    prepared(db, "INSERT INTO imports (file, at, rows) VALUES (?, ?, ?)").run(
      row.file,
      row.at,
      row.rows,
    );
  },
  /**
   * Inserts an old ledger's entry with its parts and state, after the entries held; `false`
   * (nothing written) when an entry of that id is held already. A part whose message another
   * entry holds is left to that entry.
   */
  "imports.chatEntry"(db: DatabaseSync, entry: ChatEntryImport): boolean {
    const { changes } = prepared(
      db,
      `INSERT INTO chat_entries (id, seq, ts, chat, form, ip, contact, state, by_id, by_name, at)
        VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM chat_entries), ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO NOTHING`,
    ).run(
      entry.id,
      entry.ts,
      entry.chat,
      entry.form ?? null,
      entry.ip,
      entry.contact,
      entry.state,
      entry.by ?? null,
      entry.byName ?? null,
      entry.at ?? null,
    );
    if (Number(changes) === 0) return false;
    const part = prepared(
      db,
      "INSERT INTO chat_parts (chat, message, entry, first) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    );
    for (const message of entry.messages) {
      part.run(entry.chat, message, entry.id, entry.buttons.includes(message) ? 1 : 0);
    }
    return true;
  },
} as const;
