/**
 * `/api/case/<token>` (issue 33): `GET` (and `HEAD`) shows the case page, `POST` is the sender
 * writing back. Every request to a case (a read or a post) spends its own budget per client
 * address, so tokens cannot be guessed faster by posting; an unknown, expired or wrong
 * token (or any other text after `/api/case/`) gets the same `404` as any unknown path. A
 * follow-up takes the road of a submission (lib/http/contact.ts: the rate limit, the body, the
 * honeypot, the block list, the outbox and the queue), with the case's page as its answers'
 * target: `303` back to the page, which says it was sent or why not. A decoy's page (the
 * `case_url` of a honeypot hit or a blocked sender, lib/cases/decoy.ts) is read and written the
 * same way, and what is written there reaches nobody. The origin is not checked
 * (the page has no referrer, and the token is the secret); no challenge is asked, since the page
 * runs no script and the token was given only to a sender who passed it (docs/api.md).
 *
 * @module
 */
import type { FoundCase } from "../cases/case_book.ts";
import { PAGE_HEADERS, renderCasePage, SENT_NOTICE } from "../cases/page.ts";
import { waitsForReply } from "../cases/waiting.ts";
import { clientAddress } from "../net/client_address.ts";
import { outcome } from "../log/tally.ts";
import { RateLimiter, type RateLimiterOptions, rateLimitKey } from "../net/rate_limit.ts";
import {
  bodyKind,
  type ContactDeps,
  handleContact,
  internalError,
  isFormKind,
  type PeerInfo,
} from "./contact.ts";
import { answersOf, answerStyle } from "./answer.ts";
import { refuseFollowUp } from "./accept.ts";
import { NO_HEADERS } from "./responses.ts";
import { type ErrorCode, ERRORS } from "./errors.ts";
import { errorResponse } from "./responses.ts";

/** What the case routes work with (lib/cases/case_book.ts `CaseBook`). */
export interface CaseDesk {
  find(path: string): Promise<FoundCase | undefined>;
  open(
    submission: { id: string; ts: string; form?: string | undefined; message: string },
  ): Promise<string>;
  post(
    caseId: string,
    post: { ref: string; ts: string; author: "owner" | "sender"; text: string },
  ): Promise<boolean>;
}

/**
 * Requests to case pages per client address, reads and posts alike: 60 a minute (a reload a
 * second); a post also passes the submissions' own limit.
 */
export const CASE_PAGE_BUDGET: RateLimiterOptions = Object.freeze({
  limit: 60,
  windowMs: 60_000,
  maxEntries: 250_000,
});

/** A new limiter of page reads. */
export function casePageLimiter(): RateLimiter {
  return new RateLimiter(CASE_PAGE_BUDGET);
}

/** The methods of a case page. */
export const CASE_METHODS: readonly string[] = ["GET", "HEAD", "POST"];

/** The notice of a page read with `?sent=1` or `?error=<code>` (a known code only). */
function _noticeOf(url: string): { kind: "sent" | "error"; text: string } | undefined {
  const query = url.indexOf("?");
  if (query < 0) return undefined;
  const params = new URLSearchParams(url.slice(query + 1).split("#", 1)[0]);
  if (params.get("sent") === "1") return { kind: "sent", text: SENT_NOTICE };
  const code = params.get("error");
  if (code !== null && Object.hasOwn(ERRORS, code)) {
    return { kind: "error", text: ERRORS[code as ErrorCode].message };
  }
  return undefined;
}

/**
 * Answers a request to `path` (under `/api/case/`), the method already checked. A promise that
 * never rejects.
 */
export async function handleCase(
  deps: ContactDeps & { readonly cases: CaseDesk; readonly caseLimiter: RateLimiter },
  path: string,
  request: Request,
  info: PeerInfo,
): Promise<Response> {
  try {
    // Every method looks a token up: a POST spends the budget too, or tokens could be guessed
    // by posting without any limit (a writer's budget is the submissions', far lower).
    const ip = clientAddress(
      info.remoteAddr.hostname,
      request.headers,
      deps.trustedProxies,
      deps.realIpHeader,
    );
    const decision = deps.caseLimiter.take(rateLimitKey(ip), deps.now());
    if (!decision.allowed) {
      outcome(deps.log, 429, "case_rate_limited");
      return errorResponse("rate_limited", {
        headers: { "retry-after": String(decision.retryAfterSeconds) },
      });
    }
    const found = await deps.cases.find(path);
    if (found === undefined) {
      outcome(deps.log, 404, "case_not_found");
      return errorResponse("not_found");
    }
    if (request.method !== "POST") {
      const html = renderCasePage({
        action: path,
        posts: found.posts,
        closed: found.closed,
        notice: _noticeOf(request.url),
      });
      return new Response(request.method === "HEAD" ? null : html, { headers: PAGE_HEADERS });
    }
    const targets = { success: `${path}?sent=1`, error: path };
    // Closed by the owner, or waiting for the owner's reply (lib/cases/waiting.ts): a form post
    // goes back to the page, which says why; a script gets the code (409, 429). Checked here
    // before the body is read (and the sender's budget spent, files kept); the database checks
    // the cap again as the follow-up commits, against posts racing past this check, and its
    // refusal is answered the same (lib/http/accept.ts `refuseFollowUp`).
    const refused = found.closed
      ? "case_closed"
      : waitsForReply(found.posts)
      ? "case_waiting"
      : undefined;
    if (refused !== undefined) {
      const form = isFormKind(bodyKind(request.headers.get("content-type")));
      const style = answerStyle(form, form ? request.headers.get("accept") : null, false);
      return refuseFollowUp(deps.log, answersOf(style, NO_HEADERS, targets), refused);
    }
    return await handleContact(
      {
        ...deps,
        allowedOrigins: [],
        challenge: undefined,
        ...(found.form === null ? {} : { form: found.form }),
        targets,
        // A decoy's page (lib/cases/decoy.ts) has no case: a write-back is shown there only.
        ...(found.decoy === undefined ? { followUp: found.id } : { decoy: found.decoy }),
      },
      request,
      info,
    );
  } catch (error) {
    return internalError(deps.log, request, error);
  }
}
