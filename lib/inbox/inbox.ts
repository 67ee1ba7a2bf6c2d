/**
 * The owner's inbox in the chat: what each update read by long polling (lib/inbox/poller.ts)
 * does. A press on a notification's button moves its state (lib/inbox/actions.ts), blocks or
 * unblocks its sender, edits the notification and answers with a toast; `/status` and `/pending`
 * are answered in the chat they were asked in; a reply to a notification goes to the reply desk
 * (email to the sender, lib/inbox/reply_desk.ts). Only the chats contactd notifies count, and a
 * press or reply only on the very message contactd sent for that submission (the chat ledger).
 * Every Bot API call goes through the delivery queue's pacer (the {@linkcode ChatApi} the service
 * builds). Logs name actions with submission ids only.
 *
 * @module
 */
import {
  keyboardFor,
  type MessageState,
  parseCallbackData,
  parseReleaseData,
  releaseKeyboard,
  stateLine,
  withStateLine,
} from "../bot/keyboard.ts";
import type { ChatEvent, CommandEvent, PressEvent, ReplyEvent, Sender } from "../bot/updates.ts";
import { type BotApiResult, isNotModified } from "../bot/api.ts";
import { withoutSpamMark } from "../bot/notification.ts";
import type { ChatActionsBy } from "../config/config.ts";
import type { Logger } from "../log/logger.ts";
import {
  type ActedOn,
  checkOrigin,
  decidePress,
  REFUSAL_TOASTS,
  type RefusalReason,
  spamToast,
  TEACHES,
} from "./actions.ts";
import type { Cidr } from "../common/ip.ts";
import { describeError } from "../log/logger.ts";
import { unblockableAddress } from "../spam/block_list.ts";
import { CALLS_ONLY_CHAT } from "../delivery/pacer.ts";
import { AnswerBudget, type AnswerVerdict } from "./answer_budget.ts";
import { UpdateNotSaved } from "./poller.ts";
import {
  HELD_LISTED,
  heldText,
  type PendingItem,
  pendingText,
  type StatusReport,
  statusText,
} from "./status_text.ts";

/** The Bot API calls the inbox makes, each paced by the delivery queue. */
export interface ChatApi {
  /** Edits a notification: its text (when known) and its buttons. */
  edit(
    chat: number,
    messageId: number,
    text: string | undefined,
    markup: unknown,
  ): Promise<BotApiResult>;
  /** Answers a press (`answerCallbackQuery`) with a short toast. */
  toast(queryId: string, text: string): Promise<BotApiResult>;
  /** Says `text` in `chat` (in its topic), as a reply to `replyTo`, with `markup`'s buttons. */
  say(
    chat: number,
    text: string,
    at: { topicId?: number; replyTo?: number },
    markup?: unknown,
  ): Promise<BotApiResult>;
  /** Whether `user` is an administrator of `chat` (`getChatAdministrators`, cached). */
  isAdmin(chat: number, user: number): Promise<boolean>;
}

/** What the inbox needs of the chat ledger (lib/storage/ledger.ts). */
export interface InboxLedger {
  get(
    id: string,
  ):
    | (ActedOn & {
      readonly ip: string;
      readonly contact: string;
      /** Who set the state last, and when (`formatUtc`); absent while nobody did. */
      readonly byName?: string | undefined;
      readonly at?: string | undefined;
    })
    | undefined;
  byMessage(chat: number, messageId: number): (ActedOn & { readonly ts: string }) | undefined;
  setState(id: string, state: MessageState, by: Sender, at: string): Promise<void>;
}

/** What the inbox needs of the block list (lib/spam/). */
export interface InboxBlocks {
  /** Blocks the sender of submission `entry`; resolves with the blocks made (0 to 2). */
  block(
    entry: { readonly id: string; readonly ip: string; readonly contact: string },
    by: number,
  ): Promise<number>;
  /** Lifts the blocks submission `id` made; resolves with how many. */
  lift(id: string): Promise<number>;
  /** `SPAM_BLOCK_FOR` as people say it (`30 days`), for the toast. */
  readonly period: string;
}

/** A reply to a notification, for the reply desk. */
export interface ReplyRequest {
  readonly event: ReplyEvent;
  /** The submission it answers. */
  readonly submission: string;
}

/** What the inbox works with. */
export interface InboxDeps {
  readonly api: ChatApi;
  readonly ledger: InboxLedger;
  /** The block list Spam and Not spam act on. */
  readonly blocks: InboxBlocks;
  /** The chats contactd notifies (the default form's and every form's): commands count there. */
  readonly chats: ReadonlySet<number>;
  /** `CHAT_ACTIONS_BY`. */
  readonly by: ChatActionsBy;
  /** `/status`'s report for `chat`, now: what belongs to that chat (its forms) only. */
  readonly status: (chat: number) => StatusReport;
  /** `/pending`'s items for `chat`, now: what belongs to that chat (its forms) only. */
  readonly pending: (chat: number) => readonly PendingItem[];
  /**
   * `TRUSTED_PROXIES`: a Spam press never blocks an address inside them, nor a loopback one
   * (lib/spam/block_list.ts `unblockableAddress`); default none (loopback still counts).
   */
  readonly trusted?: readonly Cidr[];
  /**
   * Whether to answer `person` in `chat` (lib/inbox/answer_budget.ts `AnswerBudget.take`; a
   * refusal named by `refusal`); default an {@linkcode AnswerBudget} on {@linkcode InboxDeps.now}.
   */
  readonly answers?: (chat: number, person: number, refusal: string | undefined) => AnswerVerdict;
  /**
   * Takes a reply to a notification (lib/inbox/reply_desk.ts): resolves with the answer to give
   * at once (why nothing is sent), or `undefined` when it was taken (its outcome is answered
   * later).
   */
  readonly reply?: (request: ReplyRequest) => Promise<string | undefined>;
  /**
   * Teaches the learned spam filter that submission `id` is `label` (`null`: takes back what a
   * press taught; lib/spam/spam_filter.ts `SpamFilter.teach`): resolves true when the filter
   * changed. Absent: `SPAM_FILTER=off`.
   */
  readonly learn?: (id: string, label: "spam" | "ham" | null) => Promise<boolean>;
  /**
   * `/held` for `chat`: what the learned spam filter held there (`SPAM_FILTER=hold`), newest
   * first, at most {@linkcode HELD_LISTED}, and how many; absent: nothing is held.
   */
  readonly held?: (
    chat: number,
  ) => Promise<{ readonly items: readonly HeldListItem[]; readonly count: number }>;
  /**
   * Releases held submission `id` pressed in `chat` (sends it there, teaches not spam): true
   * when released, false when not held in that chat (released already, past `RETENTION`, erased).
   */
  readonly release?: (id: string, chat: number) => Promise<boolean>;
  /** The wall clock (ms since the epoch), for the state line's time. */
  readonly now: () => number;
  readonly log: Logger;
}

/**
 * How an answer saying a reply was posted to the sender's case page starts (lib/inbox/case_reply.ts):
 * a success, not a refusal, so it is never withheld as a repeat.
 */
export const POSTED_TO_PAGE = "📄 Posted to the sender's page";

/** What a reply to a notification gets when replies by email are off (`SMTP_URL` unset). */
export const NO_REPLIES =
  "Replies by email are off: set SMTP_URL (and REPLY_FROM) to answer senders from here.";

/**
 * What a reply to a message of the bot that is no notification contactd keeps gets: another
 * message of the bot, or a notification whose submission is past `RETENTION` or erased (its
 * ledger entry went with its record).
 */
export const NOT_A_NOTIFICATION =
  "Not a notification contactd still keeps (past RETENTION or erased, or not one at all): " +
  "nothing was sent. Reply to a notification to email its sender.";

/**
 * What a press whose effect or state could not be written gets: the update is not confirmed, so
 * it is handled again (lib/inbox/poller.ts `UpdateNotSaved`).
 */
export const NOT_SAVED = "⚠️ Not saved (contactd could not write its files): try again.";

/** The toast of Not spam on a notification the spam filter marked (it stays open). */
export const NOT_SPAM_LEARNT = "✅ Not spam: the spam filter learns from it.";

/** A held submission as `/held` lists it. */
export interface HeldListItem {
  readonly id: string;
  readonly ts: string;
  readonly score: number;
}

/** The toasts of a release button. */
export const RELEASE_TOASTS = {
  released: "📨 Released: it is sent to this chat now, and the spam filter learns it is not spam.",
  gone: "No longer held here (released already, past RETENTION, or erased).",
} as const;

/** The chat actions; see the module documentation. */
export class Inbox {
  readonly #deps: InboxDeps;
  readonly #answers: (chat: number, person: number, refusal: string | undefined) => AnswerVerdict;

  /** An inbox over `deps`. */
  constructor(deps: InboxDeps) {
    this.#deps = deps;
    const budget = new AnswerBudget();
    this.#answers = deps.answers ??
      ((chat, person, refusal) => budget.take(chat, person, refusal, deps.now()));
  }

  /**
   * A reply to submission `id` reached its sender (posted to the case page, or emailed: the
   * reply sender's `sent`): answering says it is no spam, and the filter learns it, unless the
   * owner pressed Spam on it. Never rejects (a failure is logged `spam_teach_failed`).
   */
  async replySent(id: string): Promise<void> {
    if (this.#deps.ledger.get(id)?.state === "spam") return;
    await this.#learn(id, "ham");
  }

  /** Handles one update. Resolves once its state is written and its answers are made. */
  async handle(event: ChatEvent): Promise<void> {
    switch (event.kind) {
      case "press":
        return await this.#press(event);
      case "command":
        return await this.#command(event);
      case "reply":
        return await this.#reply(event);
      case "other":
        return; // other text and updates are ignored
    }
  }

  async #press(event: PressEvent): Promise<void> {
    const { api, ledger, log } = this.#deps;
    const released = parseReleaseData(event.data);
    if (released !== undefined) return await this.#release(event, released);
    const data = parseCallbackData(event.data);
    if (data === undefined) return this.#refuse(event, "forged");
    const entry = ledger.get(data.id);
    const decision = decidePress(event, data.action, entry);
    if (decision.kind === "refuse") return this.#refuse(event, decision.reason, data.id);
    // A chat contactd no longer notifies (a form's chat changed) acts on nothing any more.
    if (!this.#deps.chats.has(event.chatId)) {
      return this.#refuse(event, "wrong_chat", data.id);
    }
    if (!(await this.#mayAct(event.chatId, event.from))) {
      return this.#refuse(event, "not_admin", data.id);
    }
    const id = decision.id;
    const now = formatUtc(this.#deps.now());
    let state: MessageState;
    let toast: string;
    // Who set the state, and when, as the state line says it.
    let by = event.from.name;
    let at = now;
    try {
      if (decision.kind === "same") {
        state = decision.state;
        toast = `Already ${STATE_NAMES[state]}.`;
        // Made again (both are idempotent): an earlier press whose block or lift failed after
        // its state was written is completed by pressing again.
        if (state === "spam" && entry !== undefined) await this.#block(entry, event.from.id);
        if (state === "open" && data.action === "not_spam") {
          await this.#deps.blocks.lift(id);
          // Not spam on a notification the filter marked: it stays open, and the filter learns.
          if (await this.#learn(id, "ham")) toast = NOT_SPAM_LEARNT;
        }
        by = entry?.byName ?? by;
        at = entry?.at ?? at;
      } else {
        const { transition } = decision;
        state = transition.to;
        toast = transition.toast;
        // The effect before the state: a failure leaves the state as it was, and the press can
        // be repeated. The block list logs `blocked` and `unblocked` (kinds, never keys).
        if (transition.effect === "block" && entry !== undefined) {
          toast = await this.#block(entry, event.from.id);
        } else if (transition.effect === "unblock") {
          await this.#deps.blocks.lift(id);
        }
        await ledger.setState(id, state, event.from, now);
        log("info", { event: transition.event, id, update_id: event.updateId });
        await this.#learn(id, TEACHES[data.action]);
      }
    } catch (error) {
      // Said honestly, and not confirmed: the poller hands the update over again.
      log("error", {
        event: "action_not_saved",
        id,
        update_id: event.updateId,
        error: describeError(error),
      });
      this.#answer(api.toast(event.queryId, NOT_SAVED), "toast", id);
      throw new UpdateNotSaved(event.updateId, error);
    }
    this.#answer(api.toast(event.queryId, toast), "toast", id);
    // A state line only once the owner acted: a notification's own last line is never taken for
    // one (a sender may end a message with what looks like a state line).
    // Said not spam (Not spam, Handled): the filter's mark goes from the first line.
    const shown = event.text === undefined || TEACHES[data.action] !== "ham"
      ? event.text
      : withoutSpamMark(event.text);
    const text = shown === undefined
      ? undefined
      : withStateLine(shown, stateLine(state, by, at), entry?.at !== undefined);
    const edited = await api.edit(event.chatId, event.messageId, text, keyboardFor(state, id));
    if (!edited.ok && !isNotModified(edited)) {
      log("warn", { event: "action_edit_failed", id, error: edited.error });
    }
  }

  /** A press of `/held`'s release button for submission `id`. */
  async #release(event: PressEvent, id: string): Promise<void> {
    const { api, log, release } = this.#deps;
    if (release === undefined || !this.#deps.chats.has(event.chatId)) {
      return this.#refuse(event, "wrong_chat", id);
    }
    if (!(await this.#mayAct(event.chatId, event.from))) {
      return this.#refuse(event, "not_admin", id);
    }
    let done: boolean;
    try {
      done = await release(id, event.chatId);
    } catch (error) {
      log("error", { event: "spam_release_failed", id, error: describeError(error) });
      this.#answer(api.toast(event.queryId, NOT_SAVED), "toast", id);
      throw new UpdateNotSaved(event.updateId, error);
    }
    const toast = done ? RELEASE_TOASTS.released : RELEASE_TOASTS.gone;
    this.#answer(api.toast(event.queryId, toast), "toast", id);
  }

  /**
   * Teaches the spam filter; a failure is logged (`spam_teach_failed`), never the press's: its
   * state is written and stays.
   */
  async #learn(id: string, label: "spam" | "ham" | null): Promise<boolean> {
    try {
      return await this.#deps.learn?.(id, label) ?? false;
    } catch (error) {
      this.#deps.log("error", { event: "spam_teach_failed", id, error: describeError(error) });
      return false;
    }
  }

  /**
   * Blocks the sender of `entry` (its address only when it may be blocked:
   * lib/spam/block_list.ts `unblockableAddress`); resolves with the press's toast.
   */
  async #block(
    entry: { readonly id: string; readonly ip: string; readonly contact: string },
    by: number,
  ): Promise<string> {
    const { blocks } = this.#deps;
    const withheld = unblockableAddress(entry.ip, this.#deps.trusted ?? []);
    await blocks.block(withheld === undefined ? entry : { ...entry, ip: "" }, by);
    return spamToast(withheld, entry.contact.trim() !== "", blocks.period);
  }

  async #command(event: CommandEvent): Promise<void> {
    const { api, log } = this.#deps;
    if (!this.#deps.chats.has(event.chatId)) {
      // Not the owner's chat: no answer to a stranger, one tallied line.
      log("info", { event: "action_refused", result: "wrong_chat", update_id: event.updateId });
      return;
    }
    if (!(await this.#mayAct(event.chatId, event.from))) {
      log("info", { event: "action_refused", result: "not_admin", update_id: event.updateId });
      return;
    }
    if (!this.#mayAnswer(event, undefined)) return;
    let text: string;
    let markup: unknown = undefined;
    if (event.command === "held") {
      const held = await this.#deps.held?.(event.chatId) ?? { items: [], count: 0 };
      text = heldText(held.items, held.count, this.#deps.now());
      if (held.items.length > 0) {
        markup = releaseKeyboard(held.items.slice(0, HELD_LISTED).map((item) => item.id));
      }
    } else {
      text = event.command === "status"
        ? statusText(this.#deps.status(event.chatId))
        : pendingText(this.#deps.pending(event.chatId));
    }
    log("info", { event: "command_answered", command: event.command });
    const at = { ...topic(event), replyTo: event.messageId };
    this.#answer(
      markup === undefined
        ? api.say(event.chatId, text, at)
        : api.say(event.chatId, text, at, markup),
      "command_answer",
    );
  }

  async #reply(event: ReplyEvent): Promise<void> {
    const { api, ledger, log } = this.#deps;
    const entry = ledger.byMessage(event.chatId, event.replyTo);
    const refusal = checkOrigin(
      { chatId: event.chatId, messageId: event.replyTo },
      entry,
      "any_part",
    );
    const at = { ...topic(event), replyTo: event.messageId };
    if (refusal !== undefined || entry === undefined || !this.#deps.chats.has(event.chatId)) {
      // Only a reply to the bot's own message is answered (people reply to each other in
      // groups), only in a chat contactd notifies (a stranger's group hears nothing), and only
      // to someone who may act there.
      if (!event.replyToBot) return;
      if (!this.#deps.chats.has(event.chatId)) {
        log("info", { event: "action_refused", result: "wrong_chat", update_id: event.updateId });
        return;
      }
      if (!(await this.#mayAct(event.chatId, event.from))) return;
      log("info", {
        event: "action_refused",
        result: "not_notification",
        update_id: event.updateId,
      });
      if (!this.#mayAnswer(event, NOT_A_NOTIFICATION)) return;
      this.#answer(api.say(event.chatId, NOT_A_NOTIFICATION, at), "reply_answer");
      return;
    }
    if (!(await this.#mayAct(event.chatId, event.from))) {
      log("info", { event: "action_refused", result: "not_admin", id: entry.id });
      if (!this.#mayAnswer(event, REFUSAL_TOASTS.not_admin)) return;
      this.#answer(
        api.say(event.chatId, REFUSAL_TOASTS.not_admin, at),
        "reply_answer",
        entry.id,
      );
      return;
    }
    const answer = this.#deps.reply === undefined
      ? NO_REPLIES
      : await this.#deps.reply({ event, submission: entry.id });
    // Posted to the sender's page: answered, so no spam (an email teaches once sent, replySent).
    if (answer?.startsWith(POSTED_TO_PAGE)) await this.replySent(entry.id);
    if (answer === undefined) return;
    if (!this.#mayAnswer(event, answer.startsWith(POSTED_TO_PAGE) ? undefined : answer)) return;
    this.#answer(api.say(event.chatId, answer, at), "reply_answer", entry.id);
  }

  /** `CHAT_ACTIONS_BY=admins` in a group: only its administrators act. */
  async #mayAct(chat: number, from: Sender): Promise<boolean> {
    if (this.#deps.by === "members" || chat > 0) return true;
    return await this.#deps.api.isAdmin(chat, from.id);
  }

  /**
   * Whether an answer to `event`'s person in its chat is within the answers' budgets (a refusal,
   * named by `refusal`, not given to them lately); a withheld one is one tallied line.
   */
  #mayAnswer(
    event: { readonly chatId: number; readonly from: Sender; readonly updateId: number },
    refusal: string | undefined,
  ): boolean {
    const verdict = this.#answers(event.chatId, event.from.id, refusal);
    if (verdict === "answer") return true;
    this.#deps.log("info", {
      event: "action_refused",
      result: "answer_withheld",
      why: verdict,
      update_id: event.updateId,
    });
    return false;
  }

  /**
   * A refused press: one tallied line, and a toast saying why, unless that person was given the
   * same refusal lately (the toast costs no chat's budget, but a flood of presses would delay the
   * owner's toasts).
   */
  #refuse(event: PressEvent, reason: RefusalReason, id?: string): void {
    this.#deps.log("info", {
      event: "action_refused",
      result: reason,
      update_id: event.updateId,
      ...(id === undefined ? {} : { id }),
    });
    // Toasts count apart from the chat's answers (they cost no message of the chat).
    if (!this.#mayAnswer({ ...event, chatId: CALLS_ONLY_CHAT }, `toast:${reason}`)) return;
    this.#answer(this.#deps.api.toast(event.queryId, REFUSAL_TOASTS[reason]), "toast", id);
  }

  /**
   * Sends an answer (a toast, an edit, a line in the chat) without waiting for it: the update is
   * handled once its effect is saved, and the next one is read at once, so answers that wait for
   * the chat's budget (paced by the queue) never hold the owner's next press behind them. A
   * failure is logged (`chat_answer_failed`).
   */
  #answer(call: Promise<BotApiResult>, what: string, id?: string): void {
    call.then((result) => {
      if (result.ok) return;
      this.#deps.log("warn", {
        event: "chat_answer_failed",
        what,
        error: result.error,
        ...(id === undefined ? {} : { id }),
      });
    }, (error) => {
      this.#deps.log("warn", {
        event: "chat_answer_failed",
        what,
        error: describeError(error),
        ...(id === undefined ? {} : { id }),
      });
    });
  }
}

/** How each state is named in a repeated press's toast. */
const STATE_NAMES: Readonly<Record<MessageState, string>> = {
  open: "open",
  handled: "marked as handled",
  spam: "marked as spam",
};

/** The topic of an update, to answer in it. */
function topic(event: { readonly topicId?: number }): { topicId?: number } {
  return event.topicId === undefined ? {} : { topicId: event.topicId };
}

/** `2026-11-25 18:40 UTC`. */
export function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
