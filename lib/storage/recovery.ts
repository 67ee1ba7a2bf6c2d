/**
 * Start-up after a crash: a submission that reached the outbox but whose sender was never
 * answered (contactd stopped between the two) gets its backup record now, marked
 * `interrupted` unless it had reached the chat; it stays in the outbox to be delivered. One
 * whose line is damaged cannot get a record (its text is lost): it is logged
 * (`record_unrecoverable`), its line kept aside by the outbox, and start-up goes on.
 *
 * @module
 */
import { formatRecord } from "./backup.ts";
import type { Logger } from "../log/logger.ts";
import { type Outbox, OutboxEntryDamaged } from "./outbox.ts";

/** The `messenger_error` of a record written at start-up for an unanswered submission. */
export const INTERRUPTED = "interrupted";

/**
 * Writes the missing backup records; returns how many. A failed write stops start-up; a damaged
 * entry does not.
 */
export async function recoverRecords(
  outbox: Pick<Outbox, "entries" | "read" | "recorded">,
  append: (line: string) => Promise<unknown>,
  log: Logger,
): Promise<number> {
  let count = 0;
  for (const entry of [...outbox.entries()]) {
    if (entry.status !== undefined) continue;
    let submission;
    try {
      submission = await outbox.read(entry.id);
    } catch (error) {
      if (!(error instanceof OutboxEntryDamaged)) throw error;
      log("error", { event: "record_unrecoverable", id: entry.id, reason: "damaged" });
      // No answer can be given and no record written: noted, so the next start does not retry.
      await outbox.recorded(entry.id, null);
      continue;
    }
    const { ts, name, contact, message, ip } = submission;
    const delivered = entry.done === "delivered";
    await append(formatRecord({
      ts,
      id: entry.id,
      name,
      contact,
      message,
      ip,
      messenger_ok: delivered,
      messenger_error: delivered ? null : INTERRUPTED,
      form: submission.form,
      fields: submission.fields,
    }));
    await outbox.recorded(entry.id, null);
    log("warn", { event: "record_recovered", id: entry.id, delivered });
    count++;
  }
  return count;
}
