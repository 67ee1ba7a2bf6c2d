/**
 * The delivery assembled: the send queue over the outbox, paced under Telegram's limits, each
 * part sent noted in the chat ledger (a part of an erased submission deleted instead), and the
 * deletions of erased messages, which wait for the owner's calls and the backlog.
 *
 * @module
 */
import { sendMessage } from "../bot/api.ts";
import { type InlineKeyboard, keyboardFor } from "../bot/keyboard.ts";
import type { Config } from "../config/config.ts";
import { Pacer } from "../delivery/pacer.ts";
import {
  type DeliveryClock,
  DeliveryQueue,
  type Destination,
  stopWaitMs,
} from "../delivery/queue.ts";
import type { OutboxSubmission } from "../storage/outbox.ts";
import { deleteFromChat } from "../inbox/deletions.ts";
import type { Logger } from "../log/logger.ts";
import type { ForgottenIds } from "../storage/erasure.ts";
import type { ChatDeletion } from "../storage/ledger.ts";
import type { ServiceState } from "./state.ts";

/** What the delivery needs of the world. */
export interface DeliveryIO {
  readonly fetch: typeof fetch;
  readonly clock: DeliveryClock;
  readonly random: () => number;
  /** Where the queue's lines go (tallied). */
  readonly log: Logger;
  /** Told of each submission delivered (the chat's `/status` counts them). */
  readonly onDelivered: () => void;
}

/** The running delivery. */
export interface Delivery {
  readonly queue: DeliveryQueue;
  /** Deletes erased messages from the chat, after everything more urgent. */
  readonly deleteLater: (deletions: readonly ChatDeletion[]) => void;
}

/**
 * Where follow-up `submission` goes (lib/cases/): the chat of its case's notification (the chat
 * ledger's), in its form's topic, as a reply to the notification's first part, its header naming
 * the case. A case whose notification is not in the ledger (not delivered yet, erased): its form's
 * chat, marked all the same. `undefined` when it is no follow-up.
 */
export function followUpDestination(
  config: Pick<Config, "messenger" | "forms">,
  ledger: { get(id: string): { chat: number; buttons: readonly number[] } | undefined },
  submission: OutboxSubmission,
): Destination | undefined {
  // Kept in its outbox row (lib/storage/outbox.ts), so known after a restart too.
  const caseId = submission.followUp;
  if (caseId === undefined || config.messenger === undefined) return undefined;
  const form = config.forms.find((candidate) => candidate.id === submission.form);
  const own = form?.chatId === undefined
    ? { chatId: config.messenger.chatId, topicId: config.messenger.topicId }
    : { chatId: form.chatId, topicId: form.topicId };
  const entry = ledger.get(caseId);
  return {
    form: submission.form ?? "default",
    ...own,
    title: form?.title,
    followUpOf: caseId,
    ...(entry === undefined || entry.chat !== own.chatId ? {} : { replyTo: entry.buttons[0] }),
  };
}

/** Builds the queue for `config`'s bot (`undefined` when no bot is configured). */
export function buildDelivery(
  config: Config,
  io: DeliveryIO,
  state: ServiceState,
  forgotten: ForgottenIds,
): Delivery | undefined {
  const { messenger } = config;
  if (messenger === undefined) return undefined;
  const { ledger, outbox } = state;
  const api = { apiUrl: config.apiUrl, timeoutMs: config.timeoutMs, fetch: io.fetch };
  const bot = { ...api, token: messenger.token };
  let deleteLater: Delivery["deleteLater"] = () => {};
  const queue = new DeliveryQueue({
    chatId: messenger.chatId,
    send: (text, to, markup, silent) =>
      sendMessage(
        bot,
        to?.chatId ?? messenger.chatId,
        text,
        to === undefined ? messenger.topicId : to.topicId,
        markup === undefined && silent !== true && to?.replyTo === undefined ? undefined : {
          ...(markup === undefined ? {} : { replyMarkup: markup as InlineKeyboard }),
          ...(silent === true ? { silent } : {}),
          ...(to?.replyTo === undefined ? {} : { replyTo: to.replyTo }),
        },
      ),
    // A follow-up written on a case page answers its case's notification.
    followUp: (submission: OutboxSubmission) =>
      followUpDestination(config, state.ledger, submission),
    // A redelivered notification shows the state the owner set on an earlier copy.
    ...(config.chatActions.enabled
      ? {
        markup: (id: string, marked: boolean) =>
          keyboardFor(ledger.get(id)?.state ?? "open", id, marked),
      }
      : {}),
    onSent: async ({ submission, chat, messageId, first }) => {
      if (messageId === undefined) return;
      if (forgotten.has(submission.id)) {
        // Erased (contactd forget) while this part was on its way: deleted, never recorded.
        deleteLater([{ chat, messages: [messageId] }]);
        return;
      }
      await ledger.noteSent({
        id: submission.id,
        ts: submission.ts,
        chat,
        messageId,
        first,
        ...(submission.form === undefined ? {} : { form: submission.form }),
        ip: submission.ip,
        contact: submission.contact,
      });
    },
    destination: (id) => {
      const form = config.forms.find((form) => form.id === id);
      return form?.chatId === undefined
        ? undefined
        : { form: id, chatId: form.chatId, topicId: form.topicId, title: form.title };
    },
    store: {
      entries: () => outbox.entries(),
      read: (id) => outbox.read(id),
      failed: (id, ts, error) => outbox.failed(id, ts, error),
      done: (id, ts, result) => {
        if (result === "delivered") io.onDelivered();
        return outbox.done(id, ts, result);
      },
    },
    pacer: new Pacer(),
    clock: io.clock,
    random: io.random,
    log: io.log,
    waitMs: config.deliveryWaitMs,
    maxAgeMs: config.deliveryMaxAgeMs,
    stopWaitMs: stopWaitMs(config.timeoutMs),
    forgotten,
  });
  deleteLater = (deletions) =>
    void deleteFromChat(deletions, {
      api: bot,
      // After the owner's calls and the backlog: deleting is never urgent.
      call: (chat, fn) => queue.call(chat, fn, "later"),
      deleted: (deletion) => ledger.deleted(deletion),
      log: io.log,
    });
  state.onLateDeletion = (deletion) => deleteLater([deletion]);
  return { queue, deleteLater: (deletions) => deleteLater(deletions) };
}
