/**
 * What the outbox tests share: submissions with unique ids, a collecting logger, and an outbox on
 * a file system in memory at {@linkcode PATH}.
 *
 * @module
 */
import type { LogFields, Logger } from "../../lib/log/logger.ts";
import { openOutbox, type OutboxOptions, type OutboxSubmission } from "../../lib/storage/outbox.ts";
import type { StorageFs } from "../../lib/storage/file_system.ts";
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

/** Where the outbox is on the file system in memory. */
export const PATH = "/data/messages.jsonl.outbox";

/** A file system in memory with the outbox's directory. */
export function memory(): MemoryFs {
  const fs = new MemoryFs();
  fs.mkdir("/data");
  return fs;
}

/** Opens the outbox at {@linkcode PATH} on `fs`, logging to `log` (default: nowhere). */
export function open(
  fs: StorageFs,
  options: Partial<OutboxOptions> = {},
): ReturnType<typeof openOutbox> {
  return openOutbox(PATH, { log: () => {}, fs, ...options });
}
