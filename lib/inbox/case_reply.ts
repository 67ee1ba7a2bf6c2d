/**
 * A reply from the chat to a notification whose submission has a case page (issue 33): posted
 * to the page (the sender's whole conversation), and, when the sender left an email address and
 * replies by email are on, also emailed as before (lib/inbox/reply_desk.ts). The owner is told
 * `📄 Posted to the sender's page` at once (the email's outcome follows on its own). A
 * submission without a case (erased, past `RETENTION`, older than case pages) goes to the desk
 * alone, as before. Works without `SMTP_URL`: then the page is the only way back.
 *
 * @module
 */
import { formatTimestamp } from "../common/timestamp.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { emailRecipient } from "../mail/recipient.ts";
import { POSTED_TO_PAGE, type ReplyRequest } from "./inbox.ts";

/** What {@linkcode caseReplies} works with. */
export interface CaseReplyDeps {
  /** The case pages (lib/cases/case_book.ts `CaseBook`). */
  readonly cases: {
    has(id: string): Promise<boolean>;
    /** The case a follow-up submission belongs to (lib/cases/case_book.ts). */
    caseOf(id: string): Promise<string | undefined>;
    post(
      caseId: string,
      post: { ref: string; ts: string; author: "owner"; text: string },
    ): Promise<boolean>;
  };
  /** Replies by email (lib/inbox/reply_desk.ts), when `SMTP_URL` is set. */
  readonly desk?: ((request: ReplyRequest) => Promise<string | undefined>) | undefined;
  /** The contact the sender of submission `id` left (the chat ledger's), if known. */
  readonly contactOf: (id: string) => string | undefined;
  /** What a reply gets when neither a page nor email can take it. */
  readonly noReplies: string;
  /** The wall clock (ms since the epoch). */
  readonly now: () => number;
  readonly log: Logger;
}

/** The answers about the page, one short line each. */
export const CASE_ANSWERS = {
  posted: POSTED_TO_PAGE,
  noText: "Only a text reply can be posted to the sender's page: nothing was sent.",
  notSaved: "Not posted: the reply could not be saved (see the log); reply again to retry.",
} as const;

/**
 * The reply handler: resolves with the answer to give at once, or `undefined` when there is
 * nothing to say (a redelivered update already posted, or an email whose outcome comes later
 * without a page).
 */
export function caseReplies(
  deps: CaseReplyDeps,
): (request: ReplyRequest) => Promise<string | undefined> {
  const fallback = (request: ReplyRequest) =>
    deps.desk === undefined ? Promise.resolve(deps.noReplies) : deps.desk(request);
  return async (request) => {
    const { event, submission } = request;
    const { log } = deps;
    // A reply to a follow-up's notification answers its case.
    let caseId: string | undefined;
    try {
      caseId = await deps.cases.has(submission) ? submission : await deps.cases.caseOf(submission);
    } catch (error) {
      log("error", { event: "case_read_failed", submission, error: describeError(error) });
      return CASE_ANSWERS.notSaved;
    }
    if (caseId === undefined) return fallback(request);
    const email = emailRecipient(deps.contactOf(submission) ?? "") !== undefined;
    if (email && deps.desk !== undefined) {
      // Mailed as before, its answers the desk's; the page gets the text too, said only when
      // the email was refused (the reply is on the page all the same).
      const posted = event.text.trim() !== "" && await _post(deps, caseId, request) === true;
      const mailed = await deps.desk(request);
      return posted && mailed !== undefined ? `${CASE_ANSWERS.posted}\n${mailed}` : mailed;
    }
    if (event.text.trim() === "") {
      log("info", { event: "reply_refused", submission, reason: "no_text" });
      return CASE_ANSWERS.noText;
    }
    const posted = await _post(deps, caseId, request);
    if (posted !== true) return posted === undefined ? CASE_ANSWERS.notSaved : undefined;
    // An address, but replies by email are off: the page only, and the owner is told why.
    return email ? `${CASE_ANSWERS.posted}\n${deps.noReplies}` : CASE_ANSWERS.posted;
  };
}

/**
 * Posts the owner's reply to case `caseId`: `true` when posted, `false` when it was before (a
 * redelivered update), `undefined` when it could not be saved (logged `case_write_failed`).
 */
async function _post(
  deps: CaseReplyDeps,
  caseId: string,
  { event, submission }: ReplyRequest,
): Promise<boolean | undefined> {
  const ref = `${event.chatId}:${event.messageId}`;
  try {
    const posted = await deps.cases.post(caseId, {
      ref,
      ts: formatTimestamp(new Date(deps.now())),
      author: "owner",
      text: event.text,
    });
    if (posted) deps.log("info", { event: "case_reply_posted", reply: ref, submission });
    return posted;
  } catch (error) {
    deps.log("error", {
      event: "case_write_failed",
      reply: ref,
      submission,
      error: describeError(error),
    });
    return undefined;
  }
}
