/**
 * Start-up after a crash: a submission that reached the outbox but whose sender was never
 * answered (contactd stopped between the two) gets its backup record now, marked
 * `interrupted` unless it had reached the chat; it stays in the outbox to be delivered.
 *
 * @module
 */
import { formatRecord } from "./backup.ts";
import type { Logger } from "../log/logger.ts";
import type { Outbox } from "./outbox.ts";

/** The `messenger_error` of a record written at start-up for an unanswered submission. */
export const INTERRUPTED = "interrupted";

/** Writes the missing backup records; returns how many. A failed write stops start-up. */
export async function recoverRecords(
  outbox: Pick<Outbox, "entries" | "read" | "recorded">,
  append: (line: string) => Promise<unknown>,
  log: Logger,
): Promise<number> {
  let count = 0;
  for (const entry of [...outbox.entries()]) {
    if (entry.status !== undefined) continue;
    const { ts, name, contact, message, ip } = await outbox.read(entry.id);
    const delivered = entry.done === "delivered";
    await append(formatRecord({
      ts,
      name,
      contact,
      message,
      ip,
      messenger_ok: delivered,
      messenger_error: delivered ? null : INTERRUPTED,
    }));
    await outbox.recorded(entry.id, null);
    log("warn", { event: "record_recovered", id: entry.id, delivered });
    count++;
  }
  return count;
}
