/**
 * Deleting from the chat the notifications of submissions `contactd forget` erased (issue 22):
 * each message by `deleteMessage`, paced like every call. Telegram lets a bot delete its own
 * messages for 48 hours; an older one cannot be deleted (`400 message can't be deleted`), which
 * is logged (`chat_delete_failed`, with the count) and not retried: the owner deletes it by hand.
 * A deletion tried is marked done in the chat ledger either way; a network failure or a stop
 * leaves it waiting for the next start.
 *
 * @module
 */
import { type BotApiOptions, type BotApiResult, deleteMessage, failureKind } from "../bot/api.ts";
import type { PacedCall } from "../delivery/queue.ts";
import { describeError, type Logger } from "../log/logger.ts";
import type { ChatDeletion } from "../storage/ledger.ts";

/** What {@linkcode deleteFromChat} works with. */
export interface DeletionDeps {
  readonly api: BotApiOptions;
  /** The delivery queue's paced call. */
  readonly call: (chat: number, fn: PacedCall) => Promise<BotApiResult>;
  /** Marks a deletion done in the chat ledger. */
  readonly deleted: (deletion: ChatDeletion) => Promise<void>;
  readonly log: Logger;
}

/**
 * Deletes each deletion's messages, one call each, and marks it done unless a call failed for a
 * reason that may pass (network, outage, flood, a stop): then it stays for the next start. Never
 * throws; resolves with the messages deleted.
 */
export async function deleteFromChat(
  deletions: readonly ChatDeletion[],
  deps: DeletionDeps,
): Promise<number> {
  const { api, call, deleted, log } = deps;
  let total = 0;
  for (const deletion of deletions) {
    let gone = 0;
    let refused = 0;
    let later = false;
    const tried: number[] = [];
    for (const messageId of deletion.messages) {
      const result = await call(deletion.chat, () => deleteMessage(api, deletion.chat, messageId));
      if (result.ok) (gone++, tried.push(messageId));
      // The message is gone already, too old (48 h), or the chat refuses: final.
      else if (result.errorCode === 400 || result.errorCode === 403) {
        (refused++, tried.push(messageId));
      } else if (failureKind(result) !== "message") {
        later = true;
        log("warn", { event: "chat_delete_failed", chat: deletion.chat, error: result.error });
        break;
      }
    }
    total += gone;
    if (refused > 0) {
      log("warn", {
        event: "chat_delete_failed",
        chat: deletion.chat,
        messages: refused,
        hint: "Telegram lets a bot delete its messages for 48 hours: delete older ones by hand",
      });
    }
    if (gone > 0) log("info", { event: "chat_deleted", chat: deletion.chat, messages: gone });
    // Cut short: the messages tried are done, the rest wait for the next start.
    const done = later ? { chat: deletion.chat, messages: tried } : deletion;
    if (done.messages.length === 0) continue;
    try {
      await deleted(done);
    } catch (error) {
      log("error", {
        event: "ledger_write_failed",
        error: describeError(error),
      });
    }
  }
  return total;
}
