/**
 * The reply desk: a reply to a notification, written in the chat, becomes an email to the
 * sender (issue 24). It takes the reply only when it can be sent (the submission's record is
 * still in the backup file, its contact is a plain email address, the reply has text, the
 * outgoing limit allows it), puts it on disk (the replies file) before anything is sent, and
 * wakes the sender (lib/mail/reply_sender.ts), whose outcome is answered on the owner's reply.
 * Otherwise it says why in one short answer, and nothing is sent. The sender's address stays
 * private: the chat sees it masked (`c•••@example.org`), the log never.
 *
 * @module
 */
import { isRecord } from "../common/json.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { replySubject } from "../mail/message.ts";
import { emailRecipient } from "../mail/recipient.ts";
import { checkReplyLimit, type ReplyLimit } from "../mail/reply_limit.ts";
import type { ReplyOutcome } from "../mail/reply_sender.ts";
import type { ReplyStore } from "../mail/reply_store.ts";
import type { StoredRecord } from "../storage/records.ts";
import type { ReplyRequest } from "./inbox.ts";
import { formatPeriodShort } from "./status_text.ts";

/** What {@linkcode replyDesk} works with. */
export interface ReplyDeskDeps {
  readonly store: Pick<ReplyStore, "add" | "pending" | "audits">;
  /** Looks at the store again now (lib/mail/reply_sender.ts `ReplySender.wake`). */
  readonly wake: () => void;
  /** The backup record of a submission (lib/storage/records.ts `findRecord`). */
  readonly findRecord: (id: string) => Promise<StoredRecord | undefined>;
  /** `REPLY_FROM`: its domain names the site in a subject when nothing else does. */
  readonly from: string;
  /** A form's title (`FORM_<ID>_TITLE`); `undefined` for the default form. */
  readonly formTitle: (form: string | undefined) => string | undefined;
  /** `REPLY_LIMIT`. */
  readonly limit: ReplyLimit;
  /** The wall clock (ms since the epoch). */
  readonly now: () => number;
  readonly log: Logger;
}

/** The answers of the desk, one short line each. */
export const DESK_ANSWERS = {
  noText: "Only a text reply can be emailed: nothing was sent.",
  gone:
    "This message is no longer in the backup file (past RETENTION, or erased): nothing was sent.",
  noContact: "The sender left no contact: nothing was sent.",
  notSaved: "Not sent: the reply could not be saved to disk (see the log); reply again to retry.",
} as const;

/** What the chat is told of a reply's outcome (on the owner's reply). */
export function outcomeText(outcome: ReplyOutcome): string {
  switch (outcome.kind) {
    case "sent":
      return `✉️ Sent to ${outcome.to}`;
    case "waiting":
      return `⏳ Waiting: ${outcome.reason}; contactd keeps trying`;
    case "given_up":
      return `✖️ Given up: ${outcome.reason}`;
  }
}

/** The longest contact quoted back in an answer, in characters. */
const CONTACT_SHOWN = 100;

/**
 * The desk: resolves with the answer to give at once (why nothing is sent), or `undefined` when
 * the reply was accepted (its outcome is answered later) or was accepted before (a redelivered
 * update: the reply's id is its chat and message).
 */
export function replyDesk(
  deps: ReplyDeskDeps,
): (request: ReplyRequest) => Promise<string | undefined> {
  return async ({ event, submission }) => {
    const { log } = deps;
    const refuse = (reason: string, answer: string) => {
      log("info", { event: "reply_refused", submission, reason });
      return answer;
    };
    if (event.text.trim() === "") return refuse("no_text", DESK_ANSWERS.noText);
    let record: Awaited<ReturnType<typeof deps.findRecord>>;
    try {
      record = await deps.findRecord(submission);
    } catch (error) {
      // The submission could not be read (a full disk, a damaged database): nothing is sent,
      // and the owner is told to reply again.
      log("error", { event: "reply_read_failed", submission, error: describeError(error) });
      return DESK_ANSWERS.notSaved;
    }
    if (record === undefined) return refuse("record_gone", DESK_ANSWERS.gone);
    const contact = typeof record.value.contact === "string" ? record.value.contact : "";
    const to = emailRecipient(contact);
    if (to === undefined) {
      if (contact.trim() === "") return refuse("no_contact", DESK_ANSWERS.noContact);
      const shown = [...contact.replace(/[\p{Cc}\u2028\u2029]+/gu, " ").trim()]
        .slice(0, CONTACT_SHOWN).join("");
      return refuse(
        "not_email",
        `The sender left no email address, only "${shown}": nothing was sent. Answer them there.`,
      );
    }
    const now = deps.now();
    const counted = [
      ...deps.store.pending().map((reply) => reply.ts),
      ...deps.store.audits().map((audit) => audit.ts),
    ];
    const check = checkReplyLimit(counted, now, deps.limit);
    if (!check.ok) {
      return refuse(
        "limit",
        `Not sent: at most ${deps.limit.limit} replies by email per ` +
          `${formatPeriodShort(deps.limit.windowMs)} (REPLY_LIMIT); try again in ` +
          `${formatPeriodShort(check.retryAfterMs)}.`,
      );
    }
    const { fields } = record.value;
    const subjectField = isRecord(fields) && typeof fields.subject === "string"
      ? fields.subject
      : undefined;
    const id = `${event.chatId}:${event.messageId}`;
    let added: boolean;
    try {
      added = await deps.store.add({
        id,
        submission,
        ts: formatTimestamp(new Date(now)),
        chat: event.chatId,
        message: event.messageId,
        ...(event.topicId === undefined ? {} : { topic: event.topicId }),
        draft: {
          to,
          subject: replySubject({
            subjectField,
            formTitle: deps.formTitle(record.form),
            from: deps.from,
          }),
          text: event.text,
          quoted: {
            ts: record.ts,
            message: typeof record.value.message === "string" ? record.value.message : "",
          },
        },
      });
    } catch (error) {
      // Not on disk, so not sent: the owner may try again.
      log("error", {
        event: "reply_store_failed",
        reply: id,
        submission,
        error: describeError(error),
      });
      return DESK_ANSWERS.notSaved;
    }
    if (!added) return undefined; // taken before this restart: its outcome was (or will be) said
    log("info", { event: "reply_accepted", reply: id, submission });
    deps.wake();
    return undefined;
  };
}
