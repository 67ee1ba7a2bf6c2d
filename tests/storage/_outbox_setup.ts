/**
 * What the outbox tests share: submissions with unique ids, a collecting logger, and an outbox
 * over a real database in a temporary directory.
 *
 * @module
 */
import type { LogFields, Logger } from "../../lib/log/logger.ts";
import {
  openOutbox,
  type Outbox,
  type OutboxOptions,
  type OutboxSubmission,
} from "../../lib/storage/outbox.ts";
import { openLocalStore } from "../../lib/storage/store.ts";
import { MemoryFs } from "../support/memory_fs.ts";

let count = 0;

/** A new submission with a unique id (`prefix` + a counter) and `message` + the counter. */
export function submission(message = "hello\nworld", prefix = "id"): OutboxSubmission {
  count++;
  return {
    id: `${prefix}${String(count).padStart(6, "0")}`,
    ts: "2026-11-22T14:03:09Z",
    name: "Ann",
    contact: "@ann",
    message: `${message} ${count} é🙂`,
    ip: "203.0.113.7",
  };
}

/** A logger that keeps every line, its level included. */
export function logger(): { log: Logger; logs: LogFields[]; events(): string[] } {
  const logs: LogFields[] = [];
  return {
    log: (level, fields) => logs.push({ level, ...fields }),
    logs,
    events: () => logs.map((line) => String(line.event)),
  };
}

/** A file system in memory with the outbox's directory. */
export function memory(): MemoryFs {
  const fs = new MemoryFs();
  fs.mkdir("/data");
  return fs;
}

const _databases = new WeakMap<object, string>();
const _dirs: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const dir of _dirs) Deno.removeSync(dir, { recursive: true });
});

/**
 * The text of the database (and its log) kept for `owner` by {@linkcode open}, as Latin-1, so a
 * test can look for a sender's words in the file itself.
 */
export function databaseText(owner: object): string {
  const path = _databases.get(owner);
  if (path === undefined) throw new Error("no database was opened for this owner");
  const decoder = new TextDecoder("latin1");
  const read = (file: string) => {
    try {
      return decoder.decode(Deno.readFileSync(file));
    } catch {
      return "";
    }
  };
  return read(path) + read(`${path}-wal`);
}

/** An outbox that closes its database. */
/** An outbox whose `close` closes its database too. */
export type TestOutbox = Outbox;

/**
 * Opens the outbox kept for `owner` (a test's file system in memory, or any object standing for
 * one service's state): a real database in a temporary directory, the same one each time the
 * same owner is passed, so a reopen finds what the last open left.
 */
export async function open(
  owner: object,
  options: OutboxOptions = {},
): Promise<TestOutbox> {
  let path = _databases.get(owner);
  if (path === undefined) {
    const dir = Deno.makeTempDirSync({ prefix: "contactd-outbox-" });
    _dirs.push(dir);
    _databases.set(owner, path = `${dir}/messages.jsonl.db`);
  }
  const store = openLocalStore(path, { create: true });
  const outbox = await openOutbox(store, options);
  const closeOutbox = outbox.close.bind(outbox);
  return Object.assign(outbox, {
    close: async () => {
      await closeOutbox();
      await store.close();
    },
  });
}
