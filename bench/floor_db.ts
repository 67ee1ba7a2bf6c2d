/**
 * The floor's database: what one durable submission costs in SQLite and nothing more. One table,
 * WAL, `synchronous=FULL` (as contactd's, lib/storage/sqlite/database.ts), and one `INSERT` in
 * its own transaction per submission: one synced commit each, never batched.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";

/** Opens (creating) the floor's database at `path`; returns the synced insert of one body. */
export function openFloorDatabase(path: string): (body: string) => void {
  const db = new DatabaseSync(path);
  db.exec(
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; " +
      "CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
  );
  const insert = db.prepare("INSERT INTO outbox (body) VALUES (?)");
  return (body) => {
    insert.run(body);
  };
}
