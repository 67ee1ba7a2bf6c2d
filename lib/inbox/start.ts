/**
 * The chat inbox assembled: the paced Bot API calls, the inbox's rules, and the long-poll loop
 * with its offset file, over the service's ledger, block list and queue. The service starts it
 * when `CHAT_ACTIONS=1` and the bot is configured, and closes it first on a stop (the long poll
 * ends at once).
 *
 * @module
 */
import { type BotApiOptions, getUpdates, isTokenRefused } from "../bot/api.ts";
import { ALLOWED_UPDATES, parseUpdates } from "../bot/updates.ts";
import type { ChatActionsBy } from "../config/config.ts";
import type { Cidr } from "../common/ip.ts";
import type { DeliveryClock, DeliveryQueue } from "../delivery/queue.ts";
import type { Logger } from "../log/logger.ts";
import type { BlockStore } from "../spam/block_store.ts";
import type { Store } from "../storage/store.ts";
import type { Ledger } from "../storage/ledger.ts";
import { pacedChatApi } from "./chat_api.ts";
import { Inbox, type InboxDeps, NO_REPLIES } from "./inbox.ts";
import { AnswerBudget } from "./answer_budget.ts";
import { offsetStore } from "./offset_file.ts";
import { LONG_POLL_S, UpdatePoller } from "./poller.ts";
import type { PendingItem, StatusReport } from "./status_text.ts";
import type { ReplySettings } from "../mail/message.ts";
import type { ReplyLimit } from "../mail/reply_limit.ts";
import { type MailTransport, startReplySender } from "../mail/reply_sender.ts";
import type { ReplyStore } from "../mail/reply_store.ts";
import type { StoredRecord } from "../storage/records.ts";
import { outcomeText, replyDesk } from "./reply_desk.ts";
import { caseReplies } from "./case_reply.ts";
import { CaseBook } from "../cases/case_book.ts";

/** What {@linkcode startChatInbox} works with. */
export interface ChatInboxDeps {
  /** The Bot API, token included. */
  readonly api: BotApiOptions;
  readonly queue: Pick<DeliveryQueue, "call" | "tokenRefused" | "tokenAccepted">;
  readonly ledger: Ledger;
  readonly blocks: Pick<BlockStore, "block" | "lift">;
  /** `SPAM_BLOCK_FOR`. */
  readonly spamBlockMs: number;
  /** The chats contactd notifies. */
  readonly chats: ReadonlySet<number>;
  readonly by: ChatActionsBy;
  /** The bot's username (`getMe`), so `/status@<bot>` counts; `undefined` when unknown. */
  readonly botUsername: string | undefined;
  /** The bot's id (`getMe`): the offset kept is this bot's; `undefined` when unknown. */
  readonly botId: number | undefined;
  /** `/status`'s report for a chat: what belongs to it (its forms) only. */
  readonly status: (chat: number) => StatusReport;
  /** `/pending`'s items for a chat: what belongs to it (its forms) only. */
  readonly pending: (chat: number) => readonly PendingItem[];
  /** Teaches the learned spam filter (lib/inbox/inbox.ts `InboxDeps.learn`); absent: off. */
  readonly learn?: InboxDeps["learn"];
  /** `/held` (lib/inbox/inbox.ts `InboxDeps.held`); absent: nothing is held. */
  readonly held?: InboxDeps["held"];
  /** `/held`'s release buttons (lib/inbox/inbox.ts `InboxDeps.release`). */
  readonly release?: InboxDeps["release"];
  /** `TRUSTED_PROXIES`: never blocked by a Spam press (lib/spam/block_list.ts). */
  readonly trusted: readonly Cidr[];
  /** Replies by email (`SMTP_URL`); absent: replies by email are off. */
  readonly mail?: InboxMail;
  /** The database: the updates offset is kept there. */
  readonly store: Store;
  readonly clock: DeliveryClock;
  readonly random: () => number;
  readonly log: Logger;
}

/** What replies by email work with (lib/mail/, lib/inbox/reply_desk.ts). */
export interface InboxMail {
  readonly store: ReplyStore;
  readonly transport: MailTransport;
  readonly settings: ReplySettings;
  /** `REPLY_LIMIT`. */
  readonly limit: ReplyLimit;
  /** `DELIVERY_MAX_AGE`: a reply not sent by then is given up. */
  readonly maxAgeMs: number;
  /** The backup record of a submission. */
  readonly findRecord: (id: string) => Promise<StoredRecord | undefined>;
  /** A form's title; `undefined` for the default form. */
  readonly formTitle: (form: string | undefined) => string | undefined;
}

/** A running chat inbox. */
export interface RunningInbox {
  /** Ends the long poll at once and waits for an update being handled. Never rejects. */
  close(): Promise<void>;
}

/** Starts reading the chat's updates and acting on them. */
export function startChatInbox(deps: ChatInboxDeps): RunningInbox {
  const { api, clock, log, blocks, spamBlockMs } = deps;
  const chatApi = pacedChatApi({
    api,
    call: (chat, fn) => deps.queue.call(chat, fn),
    now: clock.now,
  });
  const { mail } = deps;
  // The reply sender answers each outcome on the owner's reply, paced like every call.
  const sender = mail === undefined ? undefined : startReplySender({
    store: mail.store,
    transport: mail.transport,
    settings: mail.settings,
    clock,
    random: deps.random,
    maxAgeMs: mail.maxAgeMs,
    log,
    onOutcome: (reply, outcome) => {
      // Sent: the filter learns the answered submission is no spam (lib/inbox/inbox.ts).
      if (outcome.kind === "sent") void inbox.replySent(reply.submission);
      void chatApi.say(reply.chat, outcomeText(outcome), {
        ...(reply.topic === undefined ? {} : { topicId: reply.topic }),
        replyTo: reply.message,
      }).then((result) => {
        if (!result.ok) {
          log("warn", { event: "chat_answer_failed", what: "reply_outcome", error: result.error });
        }
      });
    },
  });
  const desk = mail === undefined || sender === undefined ? undefined : replyDesk({
    store: mail.store,
    wake: () => sender.wake(),
    findRecord: mail.findRecord,
    from: mail.settings.from,
    formTitle: mail.formTitle,
    limit: mail.limit,
    now: clock.wallNow,
    log,
  });
  const answers = new AnswerBudget();
  const inbox = new Inbox({
    api: chatApi,
    ledger: deps.ledger,
    blocks: {
      block: async (entry, by) => (await blocks.block(entry, spamBlockMs, by)).length,
      lift: async (id) => (await blocks.lift(id)).length,
      period: formatPeriod(spamBlockMs),
    },
    chats: deps.chats,
    by: deps.by,
    status: deps.status,
    pending: deps.pending,
    ...(deps.learn === undefined ? {} : { learn: deps.learn }),
    ...(deps.held === undefined ? {} : { held: deps.held }),
    ...(deps.release === undefined ? {} : { release: deps.release }),
    trusted: deps.trusted,
    answers: (chat, person, refusal) => answers.take(chat, person, refusal, clock.now()),
    // Replies go to the sender's case page, and by email too when there is an address.
    reply: caseReplies({
      cases: new CaseBook(deps.store),
      desk,
      contactOf: (id) => deps.ledger.get(id)?.contact,
      noReplies: NO_REPLIES,
      now: clock.wallNow,
      log,
    }),
    now: clock.wallNow,
    log,
  });
  const poller = new UpdatePoller({
    poll: (offset, signal) =>
      getUpdates({ ...api, signal }, {
        offset,
        timeoutS: LONG_POLL_S,
        allowedUpdates: ALLOWED_UPDATES,
      }),
    parse: (updates) => parseUpdates(updates, deps.botUsername),
    handle: (event) => inbox.handle(event),
    offsets: offsetStore(deps.store, log, deps.botId),
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const timer = clock.setTimer(done, ms);
        function done() {
          clock.clearTimer(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done, { once: true });
      }),
    random: deps.random,
    log,
    // A token refused to getUpdates pauses delivery at once (health shows it), not at the next
    // submission; an answer with the token ends that pause.
    answered: (result) => {
      if (result.ok) deps.queue.tokenAccepted();
      else if (isTokenRefused(result)) deps.queue.tokenRefused(result.error);
    },
  });
  poller.start();
  log("info", { event: "chat_actions_started", chats: deps.chats.size, by: deps.by });
  let closing: Promise<void> | undefined;
  return {
    close() {
      // Once: the stop starts it, the disposer waits for the same.
      closing ??= (async () => {
        await poller.close();
        await sender?.close();
      })();
      return closing;
    },
  };
}

/** A duration as the toast says it: `30 days`, `12 hours`, `90 minutes`. */
export function formatPeriod(ms: number): string {
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  if (ms % 86_400_000 === 0) return plural(ms / 86_400_000, "day");
  if (ms % 3_600_000 === 0) return plural(ms / 3_600_000, "hour");
  return plural(Math.round(ms / 60_000), "minute");
}
