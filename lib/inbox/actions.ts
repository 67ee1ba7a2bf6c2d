/**
 * What a button press does: the owner's action on one notification, as a small state machine
 * with named transitions (open → handled → open, open → spam → open), and the rule that only the
 * very message contactd sent for a submission, in the chat it sent it to, can act on it. Pure:
 * the caller looks the submission up in the chat ledger and performs the decision.
 *
 * @module
 */
import type { ChatAction, MessageState } from "../bot/keyboard.ts";
import type { Unblockable } from "../spam/block_list.ts";

/** What the decision needs of the chat ledger's entry (lib/storage/ledger.ts `LedgerEntry`). */
export interface ActedOn {
  readonly id: string;
  readonly chat: number;
  /** The first parts' message ids: the messages with the buttons. */
  readonly buttons: readonly number[];
  /** Every part's message id. */
  readonly messages: readonly number[];
  readonly state: MessageState;
}

/** Why an update was refused; the `action_refused` line's `reason`. */
export type RefusalReason =
  /** Its `callback_data` is not one contactd writes. */
  | "forged"
  /** It names a submission the ledger does not know (erased, past RETENTION, or never sent). */
  | "unknown_submission"
  /** It comes from another chat than the one the submission was sent to. */
  | "wrong_chat"
  /** The message it is on (or answers) is not one contactd sent for that submission. */
  | "not_notification"
  /** The button belongs to an earlier state (a keyboard left over by an edit that failed). */
  | "stale"
  /** `CHAT_ACTIONS_BY=admins` and the user is not an administrator of the chat. */
  | "not_admin";

/** The short toast each refusal shows. */
export const REFUSAL_TOASTS: Readonly<Record<RefusalReason, string>> = {
  forged: "Not a contactd button.",
  unknown_submission: "This message is no longer kept by contactd.",
  wrong_chat: "Not from the chat this message was sent to.",
  not_notification: "Not a notification contactd sent.",
  stale: "This button is out of date: look at the message's current state.",
  not_admin: "Only the chat's administrators may do this.",
};

/** One transition of a notification's state. */
export interface Transition {
  readonly from: MessageState;
  readonly to: MessageState;
  /** What it does beyond the state: blocks the sender, lifts the block, or nothing. */
  readonly effect: "block" | "unblock" | "none";
  /** Its log line's event. */
  readonly event: "marked_handled" | "reopened" | "marked_spam" | "marked_not_spam";
  /** The toast that confirms it. */
  readonly toast: string;
}

/** The transitions, one per button. */
export const TRANSITIONS: Readonly<Record<ChatAction, Transition>> = {
  handled: {
    from: "open",
    to: "handled",
    effect: "none",
    event: "marked_handled",
    toast: "✓ Marked as handled",
  },
  reopen: { from: "handled", to: "open", effect: "none", event: "reopened", toast: "↩ Reopened" },
  spam: {
    from: "open",
    to: "spam",
    effect: "block",
    event: "marked_spam",
    toast: "🚫 Marked as spam: the sender is blocked",
  },
  not_spam: {
    from: "spam",
    to: "open",
    effect: "unblock",
    event: "marked_not_spam",
    toast: "✅ Not spam: the sender is no longer blocked",
  },
};

/**
 * What each button teaches the learned spam filter (lib/spam/spam_filter.ts): Spam teaches spam;
 * Handled and Not spam teach not spam (Not spam after Spam takes the spam back); Reopen takes
 * back what the last press taught. A submission teaches one label at most, the last press's.
 */
export const TEACHES: Readonly<Record<ChatAction, "spam" | "ham" | null>> = {
  handled: "ham",
  reopen: null,
  spam: "spam",
  not_spam: "ham",
};

/** What to do about a press. */
export type PressDecision =
  | { readonly kind: "refuse"; readonly reason: RefusalReason }
  /** Perform `transition` on submission `id`: its state, its effect, the edit, the toast. */
  | { readonly kind: "apply"; readonly id: string; readonly transition: Transition }
  /**
   * Already in the state the button leads to (a press repeated after a restart, or twice
   * quickly): nothing changes; the message is edited again (idempotent) and the toast says so.
   */
  | { readonly kind: "same"; readonly id: string; readonly state: MessageState };

/**
 * Where an update comes from: the chat and message of a press, or the chat and the message a
 * reply answers, checked against the submission's entry. `on` says which messages count: a
 * press must be on a message with the buttons; a reply may answer any part.
 */
export function checkOrigin(
  origin: { readonly chatId: number; readonly messageId: number },
  entry: ActedOn | undefined,
  on: "buttons" | "any_part",
): RefusalReason | undefined {
  if (entry === undefined) return "unknown_submission";
  if (origin.chatId !== entry.chat) return "wrong_chat";
  const messages = on === "buttons" ? entry.buttons : entry.messages;
  if (!messages.includes(origin.messageId)) return "not_notification";
  return undefined;
}

/**
 * Decides a press of the button `action` on submission `entry` (`undefined`: the ledger does not
 * know it), pressed on message `origin`. A press that passes {@linkcode checkOrigin} applies its
 * transition when the state is the transition's `from`, is a repeat when the state is already
 * its `to`, and is stale otherwise.
 */
export function decidePress(
  origin: { readonly chatId: number; readonly messageId: number },
  action: ChatAction,
  entry: ActedOn | undefined,
): PressDecision {
  const refusal = checkOrigin(origin, entry, "buttons");
  if (refusal !== undefined || entry === undefined) {
    return { kind: "refuse", reason: refusal ?? "unknown_submission" };
  }
  const transition = TRANSITIONS[action];
  if (entry.state === transition.to) return { kind: "same", id: entry.id, state: entry.state };
  if (entry.state !== transition.from) return { kind: "refuse", reason: "stale" };
  return { kind: "apply", id: entry.id, transition };
}

/** How a Spam press's toast names an address it did not block (lib/spam/block_list.ts). */
const WITHHELD_WORDS: Readonly<Record<Unblockable, string>> = {
  loopback: "it is this host's (a proxy that did not name the client?)",
  trusted_proxy: "it is the proxy's own (the proxy did not name the client)",
  not_an_address: "none was recorded",
};

/**
 * The toast of a Spam press that blocked for `period`: the sender (its address and contact)
 * when its address may be blocked; otherwise its contact only, or nothing without a contact,
 * saying why the address was not (`withheld`, lib/spam/block_list.ts `unblockableAddress`): a
 * block on a proxy's or this host's address would hold every sender, not this one.
 */
export function spamToast(
  withheld: Unblockable | undefined,
  hasContact: boolean,
  period: string,
): string {
  const base = TRANSITIONS.spam.toast.replace(/: .*$/, "");
  if (withheld === undefined) return `${TRANSITIONS.spam.toast} for ${period}.`;
  const why = WITHHELD_WORDS[withheld];
  return hasContact
    ? `${base}: its contact is blocked for ${period}, not its address: ${why}.`
    : `${base}: nothing is blocked (no contact, and its address: ${why}).`;
}
