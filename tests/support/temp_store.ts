/**
 * A real database in a temporary directory for the tests of what lives on the store
 * (lib/storage/store.ts, in-process: `openLocalStore`), and a store whose writes can be made to
 * fail as a full disk fails them.
 *
 * @module
 */
import {
  databasePath,
  openLocalStore,
  SQLITE_FULL,
  type Store,
  StoreError,
} from "../../lib/storage/store.ts";

/** What {@linkcode withTempStore} gives its test. */
export interface TempStore {
  /** The store, open on {@linkcode TempStore.path}. */
  readonly store: Store;
  /** The temporary directory (removed after the test). */
  readonly dir: string;
  /** The backup file's path in it (nothing is written there). */
  readonly messagesFile: string;
  /** The database's path. */
  readonly path: string;
  /** Another connection to the same database (a command's), closed after the test. */
  readonly other: () => Store;
}

/** Runs `test` with a new database in a temporary directory, then closes and removes it all. */
export async function withTempStore(test: (temp: TempStore) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const messagesFile = `${dir}/messages.jsonl`;
  const path = databasePath(messagesFile);
  const opened: Store[] = [];
  const open = () => {
    const store = openLocalStore(path, { create: true });
    opened.push(store);
    return store;
  };
  try {
    await test({ store: open(), dir, messagesFile, path, other: open });
  } finally {
    for (const store of opened) await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * A new database in a temporary directory for a test's `await using`: closed and removed when the
 * test's scope ends, whatever happened in it.
 */
export async function openTempStore(): Promise<
  Store & AsyncDisposable & { readonly path: string }
> {
  const dir = await Deno.makeTempDir();
  const path = databasePath(`${dir}/messages.jsonl`);
  const store = openLocalStore(path, { create: true });
  return {
    ...store,
    path,
    async [Symbol.asyncDispose]() {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * `store` whose operations named by `fails` reject with a {@linkcode StoreError} (the disk is
 * full) while `failing()` says so; the others run.
 */
export function failingStore(
  store: Store,
  fails: (op: string) => boolean,
  failing: () => boolean = () => true,
): Store {
  const error = () => new StoreError({ name: "Error", message: "disk full", errcode: SQLITE_FULL });
  return {
    run: (op, args) => failing() && fails(op) ? Promise.reject(error()) : store.run(op, args),
    transaction: (calls) =>
      failing() && calls.some((call) => fails(call.op))
        ? Promise.reject(error())
        : store.transaction(calls),
    checkpoint: () => store.checkpoint(),
    close: () => store.close(),
  };
}
