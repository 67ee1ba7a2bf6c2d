/**
 * A valid submission: into the outbox (durable before anything can be lost), through the send
 * queue (waiting at most `DELIVERY_WAIT_MS`), then the backup record and the honest answer.
 *
 * @module
 */
import type { Answers } from "./answer.ts";
import { formatRecord } from "../storage/backup.ts";
import type { DeliveryOutcome } from "../delivery/queue.ts";
import { type ErrorCode, ERRORS, FOLLOW_UP_REFUSALS } from "./errors.ts";
import { describeError, type Logger } from "../log/logger.ts";
import type { OutboxSubmission } from "../storage/outbox.ts";
import { followUpRefusal, type StoreCall } from "../storage/store.ts";
import { outcome } from "../log/tally.ts";
import { errorResponse } from "./responses.ts";
import type { ReceivedFile } from "../files/multipart_stream.ts";
import type { TokenSource } from "../learn/tokens.ts";
import type { FilterSubmission, Scored } from "../spam/spam_filter.ts";
import { casePath } from "../cases/token.ts";

/** What {@linkcode accept} records and sends, already validated. */
export interface Accepted {
  readonly name: string;
  readonly contact: string;
  readonly message: string;
  /** The client address the request is attributed to. */
  readonly ip: string;
  /** When the request arrived, as the record writes it. */
  readonly ts: string;
  /** The field the contact came from when it was not `contact` (shown, not recorded). */
  readonly contactFrom?: string | undefined;
  /** The form's other fields (lib/form/fields.ts): shown, and recorded under `fields`. */
  readonly fields?: Readonly<Record<string, string>> | undefined;
  /** Its form of `FORMS` (`POST /api/contact/<id>`), recorded as `form`; absent: the default. */
  readonly form?: string | undefined;
  /** The files it brought (lib/files/multipart_stream.ts), kept and recorded as `files`. */
  readonly files?: readonly ReceivedFile[] | undefined;
  /** The learned spam filter's score (lib/spam/spam_filter.ts), recorded as `spam_score`. */
  readonly spamScore?: number | undefined;
  /**
   * The features the filter scored it by (lib/spam/spam_filter.ts `Scored`): its lesson keeps
   * them (not computed twice); not recorded, not sent.
   */
  readonly spamFeatures?: readonly string[] | undefined;
}

/** What {@linkcode accept} needs of the learned spam filter (lib/spam/spam_filter.ts). */
export interface AcceptSpam {
  /**
   * The score of a submission (`undefined` while the filter does not score) and the features it
   * was scored by, for its lesson.
   */
  score(submission: TokenSource): Scored;
  /**
   * The call that keeps what `submission` would teach a press (its lesson: `features`, those it
   * was scored by; absent, computed), committed with its row.
   */
  lesson(submission: FilterSubmission, features?: readonly string[]): StoreCall;
  /** `SPAM_FILTER=hold`: a submission that looks like spam is held, not sent. */
  readonly hold: boolean;
  /**
   * Keeps a held submission for its release from the chat, with `also` (its case's opening) in
   * the same transaction.
   */
  keepHeld(
    submission: OutboxSubmission,
    spamScore: number,
    also?: readonly StoreCall[],
  ): Promise<void>;
}

/** What {@linkcode accept} touches outside itself. */
export interface AcceptDeps {
  /**
   * The outbox: `add` is synced before delivery starts; `recordedSoon` notes the answer (with
   * the next commit: recovery finds the record if a crash comes first).
   */
  readonly outbox: {
    add(submission: OutboxSubmission, also?: readonly StoreCall[]): Promise<void>;
    recordedSoon(id: string, status: number | null): Promise<void>;
  };
  /** The send queue; `undefined` while the messenger is not configured. */
  readonly queue:
    | { submit(submission: OutboxSubmission, durable: boolean): Promise<DeliveryOutcome> }
    | undefined;
  /** Appends one whole line to the backup file, synced. */
  readonly append: (line: string) => Promise<unknown>;
  readonly log: Logger;
  /** Told whether the last writes worked (health reports it). */
  readonly onStorage: (ok: boolean) => void;
  /** A new submission id (lib/form/submission_id.ts). */
  readonly newId: () => string;
  /**
   * Ids `contactd forget` erased while their senders waited (lib/storage/erasure.ts): no record
   * is written for one, so nothing of it comes back after the erasure.
   */
  readonly forgotten?: { has(id: string): boolean };
  /**
   * Keeps a submission's files: names them as kept (lib/storage/attachments.ts
   * `keepingAttachments`) and returns the calls that list them, committed with its outbox row. A
   * failure is logged (`files_write_failed`), the text goes on without them.
   */
  readonly keepingFiles?: (submission: OutboxSubmission) => Promise<readonly StoreCall[]>;
  /** The learned spam filter (`SPAM_FILTER`); absent: off. */
  readonly spam?: AcceptSpam | undefined;
  /**
   * The case pages (lib/cases/case_book.ts `CaseBook`): each accepted submission opens a case,
   * its page's path answered as `case_url`; absent: no cases.
   */
  readonly cases?: {
    /**
     * A new case to be opened in the caller's transaction (with the submission's outbox row, or
     * a held submission's held row): its token and the call.
     */
    opening(
      submission: { id: string; ts: string; form?: string | undefined; message: string },
    ): Promise<{ token: string; call: StoreCall }>;
    /** A follow-up's post on its case, in the caller's transaction. */
    posting(
      caseId: string,
      post: { ref: string; ts: string; author: "sender"; text: string },
    ): StoreCall;
  };
  /** The case this submission follows up (written on its page): posted there, opens none. */
  readonly followUp?: string | undefined;
}

/**
 * Stores the submission in the outbox, waits for its delivery (or for the queue to say it will
 * come later), appends the backup record with what happened, and answers:
 *
 * | delivered | in the outbox | answer |
 * | --- | --- | --- |
 * | yes | either | `200` |
 * | no | yes | `502 delivery_failed` (`503 not_configured`), `"stored": true`: it will be delivered |
 * | no | no | `500 internal`: not accepted, send it again |
 *
 * A failed backup write is logged and turns health `ok:false`; it does not change the answer
 * (the outbox holds the submission, and the next start writes its missing record).
 *
 * `unkept` is told the submission's id when its outbox row was not committed (a follow-up its
 * case refused, a failed write): the files it brought, named as kept for that id
 * (`keepingFiles`), are not listed anywhere, and the caller removes them.
 */
export async function accept(
  deps: AcceptDeps,
  answer: Answers,
  fields: Accepted,
  unkept: (id: string) => void = () => {},
): Promise<Response> {
  const { log } = deps;
  const { spamFeatures, ...kept } = fields;
  const submission: OutboxSubmission = {
    id: deps.newId(),
    ...kept,
    ...(deps.followUp === undefined ? {} : { followUp: deps.followUp }),
  };
  const { id } = submission;
  // One commit for the row and what goes with it: a crash leaves all of it or none.
  const withRow = await writtenWith(deps, submission, spamFeatures);
  const files = await keptFiles(deps, submission);
  let queued = true;
  try {
    await deps.outbox.add(submission, [...withRow.calls, ...files]);
  } catch (error) {
    // Nothing was committed, its files' rows neither: its files are not kept (the sweep at the
    // next start would find them), the caller removes them.
    unkept(id);
    // A follow-up its case refused in the database (it raced past the page's check, or the case
    // was erased meanwhile): nothing was committed, nothing is sent or recorded.
    const refused = followUpRefusal(error);
    if (refused !== undefined) return refuseFollowUp(log, answer, FOLLOW_UP_REFUSALS[refused]);
    queued = false;
    log("error", { event: "outbox_write_failed", id, error: describeError(error) });
  }
  const caseUrl = queued ? withRow.caseUrl : undefined;
  const delivery: DeliveryOutcome = deps.queue === undefined
    ? { ok: false, error: "not configured" }
    : await deps.queue.submit(submission, queued);

  let stored = true;
  const forgotten = deps.forgotten?.has(id) === true;
  try {
    // Erased meanwhile: its record is not written (the erasure noted it recorded).
    if (!forgotten) {
      await deps.append(formatRecord({
        ...fields,
        id,
        spam_score: fields.spamScore,
        follow_up: deps.followUp,
        messenger_ok: delivery.ok,
        messenger_error: delivery.ok ? null : delivery.error,
      }));
    }
  } catch (error) {
    stored = false;
    log("error", { event: "backup_write_failed", id, error: describeError(error) });
  }
  deps.onStorage(stored && queued);

  const code: ErrorCode | undefined = delivery.ok
    ? undefined
    : !queued
    ? "internal"
    : deps.queue === undefined
    ? "not_configured"
    : "delivery_failed";
  const status = code === undefined ? 200 : ERRORS[code].status;
  if (queued && stored && !forgotten) {
    // Not awaited: the record is written; a crash before this note is committed leaves the row
    // unmarked, and recovery finds its record in the backup file (never writes it twice).
    deps.outbox.recordedSoon(id, status).catch((error) =>
      log("error", { event: "outbox_write_failed", id, error: describeError(error) })
    );
  }
  const result = code === undefined ? (stored ? "delivered" : "delivered_not_stored") : code;
  log("info", { event: "contact", status, result, id, ...(forgotten ? { forgotten: true } : {}) });
  // Stored for later delivery: the sender keeps the case page's address as with a success.
  return code === undefined
    ? answer.success(caseUrl)
    : answer.error(code, ERRORS[code].stored === true ? { caseUrl } : {});
}

/**
 * The one answer to a follow-up its case refuses, whether the page's early check
 * (lib/http/case_route.ts) or the database as it commits (`cases.followUp`) refuses it: a case
 * gone (`not_found`) gets the plain `404` of any unknown page; one closed or waiting for the
 * owner's reply gets its code in `answer`'s style (a form post goes back to its page, which says
 * why). Tallied, not logged one by one.
 */
export function refuseFollowUp(log: Logger, answer: Answers, code: ErrorCode): Response {
  const response = code === "not_found" ? errorResponse("not_found") : answer.error(code);
  outcome(log, response.status, code === "not_found" ? "case_not_found" : code);
  return response;
}

/**
 * What is written with a submission's row (its outbox row, or a held submission's), in the same
 * transaction: its case (a new one, whose page's path is answered as `case_url`; for a follow-up,
 * its post on its case) and its lesson for the spam filter (`features`: those it was scored by).
 * A case that cannot be prepared is logged (`case_write_failed`) and the submission goes on
 * without one.
 */
export async function writtenWith(
  deps: Pick<AcceptDeps, "cases" | "followUp" | "spam" | "log">,
  submission: OutboxSubmission,
  features?: readonly string[],
): Promise<{ calls: StoreCall[]; caseUrl: string | undefined }> {
  const calls: StoreCall[] = [];
  let caseUrl: string | undefined;
  const { cases, followUp } = deps;
  const { id, ts, message } = submission;
  try {
    if (followUp !== undefined && cases !== undefined) {
      calls.push(cases.posting(followUp, { ref: id, ts, author: "sender", text: message }));
    } else if (cases !== undefined) {
      const opened = await cases.opening(submission);
      calls.push(opened.call);
      caseUrl = casePath(opened.token);
    }
  } catch (error) {
    deps.log("error", { event: "case_write_failed", id, error: describeError(error) });
  }
  if (deps.spam !== undefined) calls.push(deps.spam.lesson(submission, features));
  return { calls, caseUrl };
}

/**
 * The calls that list `submission`'s files, named as kept (`keepingFiles`), for its row's commit
 * (its outbox row, or a held submission's); none after a logged failure (`files_write_failed`).
 */
export async function keptFiles(
  deps: Pick<AcceptDeps, "keepingFiles" | "log">,
  submission: OutboxSubmission,
): Promise<readonly StoreCall[]> {
  if (submission.files === undefined || deps.keepingFiles === undefined) return [];
  try {
    return await deps.keepingFiles(submission);
  } catch (error) {
    deps.log("error", {
      event: "files_write_failed",
      id: submission.id,
      error: describeError(error),
    });
    return [];
  }
}
