/**
 * The chat actions' Bot API calls, each made in its turn by the delivery queue (paced with the
 * notifications, lib/delivery/queue.ts `call`): edits and answers count against their chat,
 * toasts against a chat of their own (id 0: about one a second, within the overall limit).
 * Administrators are asked once per chat and remembered for {@linkcode ADMINS_TTL_MS}.
 *
 * @module
 */
import {
  answerCallbackQuery,
  type BotApiOptions,
  type BotApiResult,
  editMessageReplyMarkup,
  editMessageText,
  getChatAdministrators,
  sendMessage,
} from "../bot/api.ts";
import type { InlineKeyboard } from "../bot/keyboard.ts";
import type { PacedCall } from "../delivery/queue.ts";
import type { ChatApi } from "./inbox.ts";

/** How long a chat's administrators are remembered. */
export const ADMINS_TTL_MS = 600_000;

/** The pacer's chat for toasts (no real chat has id 0). */
export const TOAST_CHAT = 0;

/** What {@linkcode pacedChatApi} works with. */
export interface ChatApiDeps {
  readonly api: BotApiOptions;
  /** The delivery queue's paced call (`DeliveryQueue.call`). */
  readonly call: (chat: number, fn: PacedCall) => Promise<BotApiResult>;
  /** A monotonic clock (ms), for the administrators' cache. */
  readonly now: () => number;
}

/** The {@linkcode ChatApi} of the service. */
export function pacedChatApi(deps: ChatApiDeps): ChatApi {
  const { api, call, now } = deps;
  const admins = new Map<number, { readonly ids: ReadonlySet<number>; readonly at: number }>();
  return {
    edit(chat, messageId, text, markup) {
      const keyboard = markup as InlineKeyboard;
      return call(
        chat,
        () =>
          text === undefined
            ? editMessageReplyMarkup(api, chat, messageId, keyboard)
            : editMessageText(api, chat, messageId, text, keyboard),
      );
    },
    toast(queryId, text) {
      return call(TOAST_CHAT, () => answerCallbackQuery(api, queryId, text));
    },
    say(chat, text, at, markup) {
      return call(
        chat,
        () =>
          sendMessage(api, chat, text, at.topicId, {
            replyTo: at.replyTo,
            ...(markup === undefined ? {} : { replyMarkup: markup as InlineKeyboard }),
          }),
      );
    },
    async isAdmin(chat, user) {
      const known = admins.get(chat);
      if (known !== undefined && now() - known.at < ADMINS_TTL_MS) return known.ids.has(user);
      const result = await getChatAdministrators(api, chat);
      // Not known (the API failing): nobody acts for now, which is the safe answer.
      if (!result.ok) return false;
      admins.set(chat, { ids: new Set(result.userIds), at: now() });
      return result.userIds.includes(user);
    },
  };
}
