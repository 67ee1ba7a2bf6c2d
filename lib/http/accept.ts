/**
 * A valid submission: into the outbox (durable before anything can be lost), through the send
 * queue (waiting at most `DELIVERY_WAIT_MS`), then the backup record and the honest answer.
 *
 * @module
 */
import type { Answers } from "./answer.ts";
import { formatRecord } from "../storage/backup.ts";
import type { DeliveryOutcome } from "../delivery/queue.ts";
import { type ErrorCode, ERRORS } from "./errors.ts";
import { describeError, type Logger } from "../log/logger.ts";
import type { OutboxSubmission } from "../storage/outbox.ts";

/** What {@linkcode accept} records and sends, already validated. */
export interface Accepted {
  readonly name: string;
  readonly contact: string;
  readonly message: string;
  /** The client address the request is attributed to. */
  readonly ip: string;
  /** When the request arrived, as the record writes it. */
  readonly ts: string;
  /** The field the contact came from when it was not `contact` (shown, not recorded). */
  readonly contactFrom?: string | undefined;
  /** The form's other fields (lib/form/fields.ts): shown, and recorded under `fields`. */
  readonly fields?: Readonly<Record<string, string>> | undefined;
  /** Its form of `FORMS` (`POST /api/contact/<id>`), recorded as `form`; absent: the default. */
  readonly form?: string | undefined;
}

/** What {@linkcode accept} touches outside itself. */
export interface AcceptDeps {
  /** The outbox: `add` is synced before delivery starts; `recorded` notes the answer. */
  readonly outbox: {
    add(submission: OutboxSubmission): Promise<void>;
    recorded(id: string, status: number | null): Promise<void>;
  };
  /** The send queue; `undefined` while the messenger is not configured. */
  readonly queue:
    | { submit(submission: OutboxSubmission, durable: boolean): Promise<DeliveryOutcome> }
    | undefined;
  /** Appends one whole line to the backup file, synced. */
  readonly append: (line: string) => Promise<unknown>;
  readonly log: Logger;
  /** Told whether the last writes worked (health reports it). */
  readonly onStorage: (ok: boolean) => void;
  /** A new submission id (lib/form/submission_id.ts). */
  readonly newId: () => string;
  /**
   * Ids `contactd forget` erased while their senders waited (lib/storage/erasure.ts): no record
   * is written for one, so nothing of it comes back after the erasure.
   */
  readonly forgotten?: { has(id: string): boolean };
}

/**
 * Stores the submission in the outbox, waits for its delivery (or for the queue to say it will
 * come later), appends the backup record with what happened, and answers:
 *
 * | delivered | in the outbox | answer |
 * | --- | --- | --- |
 * | yes | either | `200` |
 * | no | yes | `502 delivery_failed` (`503 not_configured`), `"stored": true`: it will be delivered |
 * | no | no | `500 internal`: not accepted, send it again |
 *
 * A failed backup write is logged and turns health `ok:false`; it does not change the answer
 * (the outbox holds the submission, and the next start writes its missing record).
 */
export async function accept(
  deps: AcceptDeps,
  answer: Answers,
  fields: Accepted,
): Promise<Response> {
  const { log } = deps;
  const submission: OutboxSubmission = { id: deps.newId(), ...fields };
  const { id } = submission;
  let queued = true;
  try {
    await deps.outbox.add(submission);
  } catch (error) {
    queued = false;
    log("error", { event: "outbox_write_failed", id, error: describeError(error) });
  }

  const delivery: DeliveryOutcome = deps.queue === undefined
    ? { ok: false, error: "not configured" }
    : await deps.queue.submit(submission, queued);

  let stored = true;
  const forgotten = deps.forgotten?.has(id) === true;
  try {
    // Erased meanwhile: its record is not written (the erasure noted it recorded).
    if (!forgotten) {
      await deps.append(formatRecord({
        ...fields,
        id,
        messenger_ok: delivery.ok,
        messenger_error: delivery.ok ? null : delivery.error,
      }));
    }
  } catch (error) {
    stored = false;
    log("error", { event: "backup_write_failed", id, error: describeError(error) });
  }
  deps.onStorage(stored && queued);

  const code: ErrorCode | undefined = delivery.ok
    ? undefined
    : !queued
    ? "internal"
    : deps.queue === undefined
    ? "not_configured"
    : "delivery_failed";
  const status = code === undefined ? 200 : ERRORS[code].status;
  if (queued && stored && !forgotten) {
    // Not awaited: the record is written; a crash before this note only repeats the record.
    deps.outbox.recorded(id, status).catch((error) =>
      log("error", { event: "outbox_write_failed", id, error: describeError(error) })
    );
  }
  const result = code === undefined ? (stored ? "delivered" : "delivered_not_stored") : code;
  log("info", { event: "contact", status, result, id, ...(forgotten ? { forgotten: true } : {}) });
  return code === undefined ? answer.success() : answer.error(code);
}
