/**
 * A valid submission: the notification, then the record, then the honest answer.
 *
 * @module
 */
import type { Answers } from "./answer.ts";
import { formatRecord } from "./backup.ts";
import { describeError, type Logger } from "./log.ts";
import { outcome } from "./log_tally.ts";
import { formatNotification } from "./notification.ts";
import type { Deliver, DeliveryResult } from "./telegram.ts";

/** What {@linkcode accept} records and sends, already validated. */
export interface Accepted {
  readonly name: string;
  readonly contact: string;
  readonly message: string;
  /** The client address the request is attributed to. */
  readonly ip: string;
  /** When the request arrived, as the record writes it. */
  readonly ts: string;
}

/** What {@linkcode accept} touches outside itself. */
export interface AcceptDeps {
  /** Sends the notification text; `undefined` while the messenger is not configured. */
  readonly deliver: Deliver | undefined;
  /** Appends one whole line to the backup file, synced. */
  readonly append: (line: string) => Promise<unknown>;
  readonly log: Logger;
  /** Told whether the last backup write worked (health reports it). */
  readonly onStorage: (ok: boolean) => void;
}

/**
 * Notifies, then records (even when the notification failed: nothing is lost), then answers:
 * success only if the message reached the owner; otherwise the failure, `500` if neither worked.
 */
export async function accept(
  deps: AcceptDeps,
  answer: Answers,
  fields: Accepted,
): Promise<Response> {
  const { name, contact, message, ip, ts } = fields;
  const delivery: DeliveryResult = deps.deliver === undefined
    ? { ok: false, error: "not configured" }
    : await deps.deliver(formatNotification({ name, contact, message, ip, ts }));
  if (!delivery.ok && delivery.migrateToChatId !== undefined) {
    deps.log("warn", {
      event: "chat_migrated",
      hint: "set MESSENGER_CHAT_ID to new_chat_id",
      new_chat_id: delivery.migrateToChatId,
    });
  }

  const line = formatRecord({
    ts,
    name,
    contact,
    message,
    ip,
    messenger_ok: delivery.ok,
    messenger_error: delivery.ok ? null : delivery.error,
  });
  let stored = true;
  try {
    await deps.append(line);
    deps.onStorage(true);
  } catch (error) {
    stored = false;
    deps.onStorage(false);
    deps.log("error", { event: "backup_write_failed", error: describeError(error) });
  }

  if (delivery.ok) {
    // Delivered: the sender's message reached the owner, so success is the truth even if the
    // backup failed (logged above, and health turns ok:false until a write works again).
    outcome(deps.log, 200, stored ? "delivered" : "delivered_not_stored");
    return answer.success();
  }
  deps.log("warn", { event: "delivery_failed", error: delivery.error });
  if (!stored) {
    outcome(deps.log, 500, "lost");
    return answer.error("internal");
  }
  const code = deps.deliver === undefined ? "not_configured" : "delivery_failed";
  outcome(deps.log, code === "not_configured" ? 503 : 502, code);
  return answer.error(code);
}
