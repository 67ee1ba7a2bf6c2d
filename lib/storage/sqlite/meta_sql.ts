/**
 * Small named values the service keeps between runs (`meta`): the chat's updates offset, where
 * recovery starts reading the backup file, and the like. Each key's user names its format.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";

/** The `meta` table's operations (lib/storage/sqlite/operations.ts). */
export const META_OPS = {
  /** The value of `key`, or `undefined`. */
  "meta.get"(db: DatabaseSync, args: { key: string }): string | undefined {
    const row = prepared(db, "SELECT value FROM meta WHERE key = ?").get(args.key);
    return row === undefined ? undefined : String(row.value);
  },
  /** Sets `key` to `value`. */
  "meta.set"(db: DatabaseSync, args: { key: string; value: string }): void {
    prepared(
      db,
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = ?",
    ).run(args.key, args.value, args.value);
  },
  /**
   * A number that changes when another connection (a command) has committed a change since
   * the last look (`PRAGMA data_version`).
   */
  "meta.dataVersion"(db: DatabaseSync): number {
    return Number(prepared(db, "PRAGMA data_version").get()?.data_version ?? 0);
  },
} as const;
