/**
 * The owner's inbox in the chat assembled (`CHAT_ACTIONS=1` with a bot): presses, commands and
 * replies read by long polling, and replies by email when `SMTP_URL` is set. `/status` reads an
 * explicit counter of the last 24 hours ({@linkcode RecentCounts}), never log lines.
 *
 * @module
 */
import type { FileState } from "../storage/attachments.ts";
import type { Config } from "../config/config.ts";
import type { DeliveryClock, DeliveryQueue } from "../delivery/queue.ts";
import { type InboxMail, type RunningInbox, startChatInbox } from "../inbox/start.ts";
import { oldestMessageMs, pendingItems } from "../inbox/status_text.ts";
import type { Logger } from "../log/logger.ts";
import type { RecentCounts } from "../log/recent_counts.ts";
import { smtpTransport } from "../mail/smtp_transport.ts";
import { ehloName } from "../mail/smtp_server.ts";
import { findReplySource } from "../mail/reply_sources.ts";
import type { Store } from "../storage/store.ts";
import type { ServiceState } from "./state.ts";
import type { SpamFilter } from "../spam/spam_filter.ts";
import { heldInChat } from "./spam.ts";

/** What the chat inbox needs of the world. */
export interface ChatIO {
  readonly fetch: typeof fetch;
  readonly clock: DeliveryClock;
  readonly random: () => number;
  /** Where the inbox's lines go (tallied). */
  readonly log: Logger;
}

/** The bot as `getMe` named it at start (`undefined` fields when it could not be asked). */
export interface BotIdentity {
  readonly username: string | undefined;
  readonly id: number | undefined;
}

/**
 * Starts the inbox onto `stack` (the stack closes it: the long poll ends at once, an update
 * being handled is waited for); `undefined` when the chat actions are off or no bot is set.
 */
export function startChat(
  config: Config,
  io: ChatIO,
  stack: AsyncDisposableStack,
  state: ServiceState,
  queue: DeliveryQueue,
  recent: RecentCounts,
  bot: BotIdentity,
  spam?: SpamFilter,
  documents?: { waiting(): readonly FileState[] },
): RunningInbox | undefined {
  const { messenger, chatActions } = config;
  if (messenger === undefined || !chatActions.enabled) return undefined;
  const { outbox, replies, ledger, blocks } = state;
  const mail = replies === undefined ? undefined : _mail(config, stack, replies, state.store);
  // Each chat sees what belongs to it: its forms' submissions and the replies written there.
  const chatOf = (form: string | undefined) =>
    config.forms.find((candidate) => candidate.id === form)?.chatId ?? messenger.chatId;
  const waiting = (chat: number) =>
    pendingItems(outbox.entries(), replies?.pending() ?? [], io.clock.wallNow(), {
      chat,
      chatOf,
    }, documents?.waiting() ?? []);
  const inbox = startChatInbox({
    api: {
      apiUrl: config.apiUrl,
      timeoutMs: config.timeoutMs,
      fetch: io.fetch,
      token: messenger.token,
    },
    queue,
    ledger,
    blocks,
    spamBlockMs: config.spamBlockMs,
    chats: new Set([messenger.chatId, ...config.forms.flatMap((form) => form.chatId ?? [])]),
    by: chatActions.by,
    trusted: config.trustedProxies,
    botUsername: bot.username,
    botId: bot.id,
    ...(mail === undefined ? {} : { mail }),
    status: (chat) => {
      const now = io.clock.now();
      const items = waiting(chat);
      return {
        delivery: queue.status(),
        pending: items.filter((item) => item.kind === "message").length,
        files: items.filter((item) => item.kind === "file").length,
        oldestMs: oldestMessageMs(items),
        replies: replies === undefined
          ? undefined
          : items.filter((item) => item.kind === "reply").length,
        // The last 24 hours are site-wide: only the default form's chat is told them.
        last24h: chat !== messenger.chatId ? undefined : {
          delivered: recent.count("delivered", now),
          heldSpam: recent.count("held_spam", now),
          rateLimited: recent.count("rate_limited", now),
        },
        ...(spam === undefined ? {} : { spamFilter: spam.counts() }),
      };
    },
    pending: waiting,
    ...(spam === undefined ? {} : {
      learn: (id: string, label: "spam" | "ham" | null) => spam.teach(id, label),
      ...heldInChat(spam, chatOf, outbox, queue, io.log),
    }),
    store: state.store,
    clock: io.clock,
    random: io.random,
    log: io.log,
  });
  stack.defer(() => inbox.close());
  return inbox;
}

/** Replies by email: the SMTP transport (closed by the stack) and what the desk reads. */
function _mail(
  config: Config,
  stack: AsyncDisposableStack,
  store: NonNullable<ServiceState["replies"]>,
  database: Store,
): InboxMail | undefined {
  const mail = config.mail;
  if (mail === undefined) return undefined;
  const transport = smtpTransport({ server: mail, name: ehloName(mail.from) });
  stack.defer(() => transport.close());
  return {
    store,
    transport,
    settings: { from: mail.from, ...(mail.replyTo === undefined ? {} : { replyTo: mail.replyTo }) },
    limit: config.replyLimit,
    maxAgeMs: config.deliveryMaxAgeMs,
    findRecord: (id: string) => findReplySource(database, id),
    formTitle: (form: string | undefined) =>
      config.forms.find((candidate) => candidate.id === form)?.title,
  };
}
