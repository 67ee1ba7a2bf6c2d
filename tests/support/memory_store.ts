/**
 * A store on an in-memory SQLite database: the real schema and operations, no file, nothing to
 * remove afterwards. For the tests of rules above the store that open one per case (the reply
 * sender's); what the file itself does (its mode, WAL, a second connection) is tested on a real
 * one (tests/support/temp_store.ts).
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { runBatch } from "../../lib/storage/sqlite/operations.ts";
import { migrate } from "../../lib/storage/sqlite/schema.ts";
import { type Store, StoreError } from "../../lib/storage/store.ts";

/** A new, empty store in memory; `close` drops it. */
export function memoryStore(): Store {
  let db: DatabaseSync | undefined = new DatabaseSync(":memory:");
  migrate(db, 0);
  const run = (calls: Parameters<Store["transaction"]>[0]): Promise<unknown[]> => {
    if (db === undefined) {
      return Promise.reject(new StoreError({ name: "Error", message: "store closed" }));
    }
    const [outcome] = runBatch(db, [calls]);
    return outcome!.ok
      ? Promise.resolve(outcome!.results)
      : Promise.reject(new StoreError(outcome!.error));
  };
  return {
    run: async (op, args) => (await run([{ op, args }]))[0] as never,
    transaction: run,
    checkpoint: () => Promise.resolve(),
    close: () => {
      db?.close();
      db = undefined;
      return Promise.resolve();
    },
  };
}
