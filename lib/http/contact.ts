/**
 * `POST /api/contact` (and `/api/contact/<id>`, a form of `FORMS`): the rules in the order they
 * apply.
 *
 * @module
 */
import { type Answers, answersOf, type AnswerStyle, answerStyle } from "./answer.ts";
import {
  accept,
  type AcceptDeps,
  type Accepted,
  keptFiles,
  refuseFollowUp,
  writtenWith,
} from "./accept.ts";
import type { DecoyKind } from "../cases/decoy.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { BODY_LIMIT, type BodyResult, withBody } from "./body.ts";
import type { ChallengeGate, ChallengeVerdict } from "../challenge/altcha.ts";
import { clientAddress, type ProxyNotice } from "../net/client_address.ts";
import type { RealIpHeader } from "../config/config.ts";
import { checkOrigin, corsHeaders } from "./cors.ts";
import { clientGone } from "./client_gone.ts";
import { formPost, parseFormPost } from "../form/form_post.ts";
import { decodeMultipart } from "../form/multipart.ts";
import type { ReceivedFile } from "../files/multipart_stream.ts";
import {
  type AttachmentsDeps,
  type FilesPost,
  filesTimeoutMs,
  readFilesPost,
  removeFiles,
} from "./files_post.ts";
import { type PageOrigin, pageOrigin, type RedirectTargets } from "../form/redirect.ts";
import { casePath, newToken } from "../cases/token.ts";
import type { Cidr } from "../common/ip.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { outcome } from "../log/tally.ts";
import { type RateLimiter, rateLimitKey } from "../net/rate_limit.ts";
import { type ErrorCode, ERRORS, FOLLOW_UP_REFUSALS } from "./errors.ts";
import { decodeJson, isRecord } from "../common/json.ts";
import { parseSubmission, type SubmissionResult } from "../form/submission.ts";
import { type Block, blockableSender, type Sender } from "../spam/block_list.ts";
import { HELD_SPAM_ERROR, heldRecord } from "../spam/held_record.ts";
import { looksLikeSpam } from "../learn/classifier.ts";
import type { OutboxSubmission } from "../storage/outbox.ts";
import { keptName } from "../storage/attachments.ts";
import { type FollowUpRefusal, followUpRefusal } from "../storage/store.ts";

/** Everything the contact pipeline touches outside itself. */
export interface ContactDeps extends AcceptDeps {
  /** The clock, in milliseconds since the epoch (`Date.now`); read once per request. */
  readonly now: () => number;
  /**
   * Told of each POST held as spam or refused by the rate limiter (the chat's `/status` counts
   * them, lib/log/recent_counts.ts); absent: not counted.
   */
  readonly count?: (what: "held_spam" | "rate_limited") => void;
  readonly trustedProxies: readonly Cidr[];
  /** `REAL_IP_HEADER`: the header trusted proxies name the client in; default X-Forwarded-For. */
  readonly realIpHeader?: RealIpHeader;
  readonly limiter: RateLimiter;
  /** `ALLOWED_ORIGINS`; empty means no CORS and no `Origin` check. */
  readonly allowedOrigins: readonly string[];
  /**
   * Hands out the signal that aborts when the request body has taken too long; called once per
   * admitted POST with the request's time. createHandler defaults it to one shared signal per
   * second (lib/http/deadline.ts).
   */
  readonly bodyDeadline: (nowMs: number) => AbortSignal;
  /**
   * Aborts when the service stops (lib/http/drain.ts `Drain.signal`): a body still arriving is
   * ended then, its files removed, and answered `503 stopping` (createHandler's default
   * `bodyDeadline` aborts with it). Absent: bodies end only at their deadline.
   */
  readonly stopping?: AbortSignal | undefined;
  /** `CHALLENGE`: the check after the honeypot; absent with `CHALLENGE=none`. */
  readonly challenge?: ChallengeGate | undefined;
  /** The form of `FORMS` this path serves (`POST /api/contact/<id>`); absent: the default form. */
  readonly form?: string | undefined;
  /**
   * Served at `POST /api/f/<id>` (Formspree's path, for `@formspree/core`): JSON answers also
   * carry Formspree's shape (lib/http/answer.ts `answerStyle`).
   */
  readonly formspree?: boolean | undefined;
  /**
   * The spam block list (lib/spam/block_store.ts `BlockStore`): a valid submission from a blocked
   * sender (its client address key or its exact contact) is answered like a honeypot hit and only
   * recorded, held. Absent: nothing is blocked.
   */
  readonly blocks?: { match(sender: Sender, now: number): Block | undefined } | undefined;
  /** Says when requests carry a trusted proxy's own address (lib/net/client_address.ts). */
  readonly proxyNotice?: ProxyNotice | undefined;
  /**
   * The form's files (`ATTACHMENTS`, lib/http/files_post.ts): with `maxBytes` over 0, a multipart
   * post is read as a stream and its files kept; absent or 0, a file is `415 file_not_accepted`.
   */
  readonly attachments?: AttachmentsDeps | undefined;
  /**
   * Where a form post's answers go, whatever the form names (a case page's write-back: back to
   * the page, lib/http/case_route.ts); absent: the form's own `_redirect` fields.
   */
  readonly targets?: RedirectTargets | undefined;
  /**
   * The case pages, with the decoys of successes that open none (lib/cases/case_book.ts
   * `CaseBook.decoy`: its token, its page showing `first`, the sender's message); absent: none.
   */
  readonly cases?: NonNullable<AcceptDeps["cases"]> & DecoyDesk;
  /**
   * A write-back to a decoy's page (lib/cases/decoy.ts): a valid one is shown on that page only,
   * never kept, recorded or sent, and answered as a follow-up's success (lib/http/case_route.ts);
   * `false` when the page takes no more (its cap, as a real case's: answered `case_waiting`).
   */
  readonly decoy?: ((post: { ts: string; text: string }) => boolean) | undefined;
}

/** What makes a decoy's `case_url` (lib/cases/case_book.ts `CaseBook.decoy`). */
export interface DecoyDesk {
  decoy(first?: { ts: string; message: string }, kind?: DecoyKind): Promise<string>;
}

/** The TCP peer as `Deno.serve` reports it. */
export interface PeerInfo {
  readonly remoteAddr: { readonly hostname: string };
}

/**
 * Handles one `POST /api/contact`. Refusals made before the body is read come back at once;
 * the rest as a promise that never rejects (an unexpected error is answered `500`).
 */
export function handleContact(
  deps: ContactDeps,
  request: Request,
  info: PeerInfo,
): Response | Promise<Response> {
  const nowMs = deps.now();
  const { allowedOrigins } = deps;
  const kind = bodyKind(request.headers.get("content-type"));
  // Without ALLOWED_ORIGINS the header is not even read (checkOrigin ignores it then).
  const origin = checkOrigin(
    allowedOrigins.length === 0 ? null : request.headers.get("origin"),
    allowedOrigins,
  );
  const cors = corsHeaders(origin, allowedOrigins);
  // Form posts from browsers without JavaScript get pages; a script's gets JSON (its Accept).
  const form = isFormKind(kind);
  // Accept matters to a form body only: a JSON post does not pay for reading it.
  const style = answerStyle(form, form ? request.headers.get("accept") : null, deps.formspree);
  const answer: Answers = answersOf(style, cors, deps.targets);

  if (origin.kind === "refused") {
    // Before the rate limit: another site's visitors must not use up this site's quota.
    deps.log("info", {
      event: "contact",
      status: 403,
      result: "origin_not_allowed",
      origin: origin.origin.slice(0, 100),
    });
    return answer.error("origin_not_allowed");
  }

  const ip = clientAddress(
    info.remoteAddr.hostname,
    request.headers,
    deps.trustedProxies,
    deps.realIpHeader,
  );
  const notice = deps.proxyNotice?.note(
    ip,
    deps.trustedProxies,
    deps.realIpHeader ?? "x-forwarded-for",
    nowMs,
  );
  if (notice !== undefined) deps.log("warn", notice);
  const decision = deps.limiter.take(rateLimitKey(ip), nowMs);
  if (!decision.allowed) {
    outcome(deps.log, 429, "rate_limited");
    deps.count?.("rate_limited");
    return answer.error("rate_limited", {
      headers: { "retry-after": String(decision.retryAfterSeconds) },
    });
  }

  const context: Context = { request, kind, cors, style, answer, ip, nowMs };
  if (kind === "multipart" && (deps.attachments?.maxBytes ?? 0) > 0) {
    return withFiles(deps, deps.attachments!, context);
  }
  // One limit for every body, the reverse proxy's (client_max_body_size 16k).
  return withBody(
    request,
    BODY_LIMIT,
    deps.bodyDeadline(nowMs),
    // What the rules throw is an internal error, whatever it is: only a failed read may be the
    // client's going away.
    (body) => {
      try {
        return withinBody(deps, body, context);
      } catch (error) {
        return internalError(deps.log, request, error, style);
      }
    },
    (error) =>
      clientGone(error)
        ? abandoned(
          deps.log,
          style,
          kind === "multipart" ? "invalid_multipart" : "invalid_body",
          error,
        )
        : internalError(deps.log, request, error, style),
    // The body was already answered (408): a stream that will not even cancel is only logged.
    (error) => deps.log("warn", { event: "body_cancel_failed", error: describeError(error) }),
  );
}

/** What the rules after the body need from before it. */
interface Context {
  readonly request: Request;
  readonly kind: BodyKind | undefined;
  readonly cors: Readonly<Record<string, string>>;
  readonly style: AnswerStyle;
  readonly answer: Answers;
  readonly ip: string;
  readonly nowMs: number;
  /**
   * The files a post with files brought, `claimed` once {@linkcode accept} took them; given back
   * ({@linkcode releaseFiles}) when the row that was to keep them, submission `keptFor`'s, was not
   * committed.
   */
  readonly files?: {
    readonly list: readonly ReceivedFile[];
    claimed: boolean;
    keptFor?: string | undefined;
  };
}

/**
 * A multipart post to a form that takes files: read as a stream (lib/http/files_post.ts), then
 * the same rules as any form post. Files a refused, honeypot or blocked sender's post brought are
 * removed once it is answered; an accepted one's go with it, and so do those of one the spam
 * filter held (kept for its release), unless its row was not committed ({@linkcode releaseFiles}).
 */
async function withFiles(
  deps: ContactDeps,
  attachments: AttachmentsDeps,
  context: Context,
): Promise<Response> {
  const { request, style, cors } = context;
  const page = pageOf(request, deps.allowedOrigins);
  // One timer per upload (uploads are few and long), cleared once the body is read; the stop
  // ends the read too.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stop = () => {};
  const expired = new Promise((resolve) => {
    timer = setTimeout(resolve, filesTimeoutMs(attachments.maxBytes));
    stop = () => resolve(undefined);
    if (deps.stopping?.aborted === true) stop();
    deps.stopping?.addEventListener("abort", stop, { once: true });
  });
  let post: FilesPost;
  try {
    post = await readFilesPost(request, attachments, `u${newUploadId()}`, expired);
  } catch (error) {
    return internalError(deps.log, request, error, style);
  } finally {
    clearTimeout(timer);
    deps.stopping?.removeEventListener("abort", stop);
  }
  if (post.kind === "abandoned") return abandoned(deps.log, style, "invalid_multipart", post.error);
  if (post.kind === "refused") {
    const targets = post.pairs === undefined
      ? {}
      : deps.targets ?? formPost(post.pairs, deps.allowedOrigins, page).targets;
    const code = post.code === "request_timeout" ? timedOut(deps) : post.code;
    outcome(deps.log, ERRORS[code].status, code);
    const { field, message } = post;
    return answersOf(style, cors, targets).error(code, {
      ...(field === undefined ? {} : { field }),
      ...(message === undefined ? {} : { message }),
      ...(post.unread === true ? { headers: { connection: "close" } } : {}),
    });
  }
  const form = formPost(post.pairs, deps.allowedOrigins, page);
  const proof = deps.challenge === undefined ? undefined : form.proofs[deps.challenge.field];
  const files: NonNullable<Context["files"]> = { list: post.files, claimed: false };
  try {
    return await _afterParse(
      deps,
      form.result,
      answersOf(style, cors, deps.targets ?? form.targets),
      proof,
      {
        ...context,
        files,
      },
    );
  } finally {
    if (!files.claimed) {
      // Given back after they were named as kept (lib/storage/attachments.ts): those names too.
      const { keptFor } = files;
      const kept = keptFor === undefined
        ? []
        : post.files.map((file, idx) => ({ ...file, stored: keptName(keptFor, idx) }));
      removeFiles(attachments.spool, [...post.files, ...kept]).catch((error) =>
        deps.log("error", { event: "files_remove_failed", error: describeError(error) })
      );
    }
  }
}

/**
 * The code of a body whose deadline passed: its own (`408 request_timeout`), or the service's
 * stop, which ends every body still arriving (`503 stopping`: not sent, send it again).
 */
function timedOut(deps: ContactDeps): "request_timeout" | "stopping" {
  return deps.stopping?.aborted === true ? "stopping" : "request_timeout";
}

/** A name for one upload's files in the spool, unique and unguessable. */
function newUploadId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** The rules that need the body, in order; a valid submission goes on to {@linkcode accept}. */
function withinBody(
  deps: ContactDeps,
  body: BodyResult,
  context: Context,
): Response | Promise<Response> {
  const { kind, answer } = context;
  if (!body.ok) {
    const code = body.reason === "timeout" ? timedOut(deps) : "payload_too_large";
    outcome(deps.log, ERRORS[code].status, code);
    // The body is left unread, so the connection closes. Deno's HTTP layer says so itself
    // (`connection: close`) for a Content-Length body, not for a chunked one: one header each.
    return answer.error(
      code,
      context.request.headers.has("content-length") ? {} : { headers: { connection: "close" } },
    );
  }
  if (kind === undefined) {
    outcome(deps.log, 415, "unsupported_media_type");
    return answer.error("unsupported_media_type");
  }

  if (kind === "multipart") {
    const type = context.request.headers.get("content-type") ?? "";
    const page = pageOf(context.request, deps.allowedOrigins);
    return decodeMultipart(body.bytes, type).then((decoded) => {
      if (decoded.kind === "invalid") {
        // A body that parsed still names its `_redirect_error`: the refusal goes there.
        const { pairs, ...invalid } = decoded;
        const targets = pairs === undefined
          ? {}
          : deps.targets ?? formPost(pairs, deps.allowedOrigins, page).targets;
        const answers = answersOf(context.style, context.cors, targets);
        return _afterParse(deps, invalid, answers, undefined, context);
      }
      const post = formPost(decoded.pairs, deps.allowedOrigins, page);
      const proof = deps.challenge === undefined ? undefined : post.proofs[deps.challenge.field];
      return _afterParse(
        deps,
        post.result,
        answersOf(context.style, context.cors, deps.targets ?? post.targets),
        proof,
        context,
      );
    }).catch((error) => internalError(deps.log, context.request, error, context.style));
  }
  let parsed: SubmissionResult;
  let answers = answer;
  let proof: unknown;
  const gate = deps.challenge;
  if (kind === "form") {
    const post = parseFormPost(
      body.bytes,
      deps.allowedOrigins,
      pageOf(context.request, deps.allowedOrigins),
    );
    answers = answersOf(context.style, context.cors, deps.targets ?? post.targets);
    parsed = post.result;
    if (gate !== undefined) proof = post.proofs[gate.field];
  } else {
    const decoded = decodeJson(body.bytes);
    parsed = decoded.ok ? parseSubmission(decoded.value) : { kind: "invalid", code: decoded.code };
    if (gate !== undefined && decoded.ok && isRecord(decoded.value)) {
      proof = Object.hasOwn(decoded.value, gate.field) ? decoded.value[gate.field] : undefined;
    }
  }
  return _afterParse(deps, parsed, answers, proof, context);
}

/** The honeypot, then the challenge, for a body already decoded (any media type). */
function _afterParse(
  deps: ContactDeps,
  parsed: SubmissionResult,
  answers: Answers,
  proof: unknown,
  context: Context,
): Response | Promise<Response> {
  const gate = deps.challenge;
  if (parsed.kind === "honeypot") {
    outcome(deps.log, 200, "honeypot");
    // Its decoy page shows its message (if it sent one) as a real page would.
    const { message } = parsed;
    const ts = formatTimestamp(new Date(context.nowMs));
    return decoyCase(deps, message === undefined ? undefined : { ts, message }, "honeypot")
      .then((caseUrl) => answers.success(caseUrl));
  }
  // A body that could not be decoded has no proof to check: its 400 comes first.
  if (gate !== undefined && !(parsed.kind === "invalid" && UNDECODED.has(parsed.code))) {
    return gate.check(proof, context.ip, context.nowMs).then((verdict) => {
      const consume = () => gate.consume?.(proof, context.nowMs) ?? "passed";
      if (verdict === "passed") return afterChallenge(deps, parsed, answers, context, consume);
      outcome(deps.log, ERRORS[verdict].status, verdict);
      return answers.error(verdict);
    }).catch((error) => internalError(deps.log, context.request, error, context.style));
  }
  return afterChallenge(deps, parsed, answers, context, () => "passed");
}

/** Refusals of a body whose fields could not be read at all: they come before the challenge. */
const UNDECODED: ReadonlySet<ErrorCode> = new Set([
  "invalid_json",
  "invalid_encoding",
  "invalid_body",
  "invalid_multipart",
  "file_not_accepted",
]);

/**
 * Validation, then the proof is used up (`consume`: only a valid submission spends it, so posts
 * refused here cannot fill the replay set), then {@linkcode accept}.
 */
function afterChallenge(
  deps: ContactDeps,
  parsed: SubmissionResult,
  answers: Answers,
  context: Context,
  consume: () => ChallengeVerdict,
): Response | Promise<Response> {
  if (parsed.kind === "honeypot") return answers.success(); // answered before; for the types
  if (parsed.kind === "invalid") {
    outcome(deps.log, ERRORS[parsed.code].status, parsed.code);
    return answers.error(parsed.code, parsed); // its field and sentence, if any
  }
  const consumed = consume();
  if (consumed !== "passed") {
    outcome(deps.log, ERRORS[consumed].status, consumed);
    return answers.error(consumed);
  }
  const { ip, nowMs, request } = context;
  const ts = formatTimestamp(new Date(nowMs));
  if (deps.decoy !== undefined) {
    // Written back on a decoy's page: shown there as on a real one, and nowhere else; past its
    // cap refused as a real case refuses (checked again here: posts may race past the route's).
    if (!deps.decoy({ ts, text: parsed.submission.message })) {
      return refuseFollowUp(deps.log, answers, "case_waiting");
    }
    outcome(deps.log, 200, "decoy_follow_up");
    return answers.success();
  }
  const form = deps.form === undefined ? {} : { form: deps.form };
  // A follow-up carries what its case page's form sends, the message: a crafted post's name,
  // contact and other fields are dropped (a reply to it goes to the page, never to an address).
  const own = deps.followUp === undefined
    ? parsed.submission
    : { name: "", contact: "", message: parsed.submission.message };
  const fields: Accepted = { ...own, ip, ts, ...form };
  // The proxy's own address (or this host's) blocks nobody: only the contact is checked.
  const sender = blockableSender({ ip, contact: fields.contact }, deps.trustedProxies);
  const block = deps.blocks?.match(sender, nowMs);
  // The learned filter's score (lib/spam/spam_filter.ts) never changes the sender's answer; its
  // features go with it, for its lesson.
  const spam = block === undefined ? deps.spam?.score(fields) : undefined;
  const spamScore = spam?.score;
  const scored: Accepted = spam === undefined ? fields : {
    ...fields,
    ...(spamScore === undefined ? {} : { spamScore }),
    spamFeatures: spam.features,
  };
  const held = block ??
    (deps.spam?.hold === true && looksLikeSpam(spamScore) ? "filter" as const : undefined);
  // A blocked sender's files are removed (withFiles); the filter's hold keeps them, as accept does
  // (given back when nothing was committed).
  const release = (id: string) => releaseFiles(context, id);
  const accepted = held === undefined
    ? accept(deps, answers, claimFiles(scored, context), release)
    : hold(deps, held === "filter" ? claimFiles(scored, context) : scored, held, release)
      .then(async (kept) =>
        "refused" in kept
          ? refuseFollowUp(deps.log, answers, FOLLOW_UP_REFUSALS[kept.refused])
          : answers.success(
            kept.caseUrl ?? await decoyCase(deps, { ts, message: fields.message }, "blocked"),
          )
      );
  return accepted.catch((error) => internalError(deps.log, request, error, context.style));
}

/** `fields` with the files the post brought, which {@linkcode accept} now keeps. */
function claimFiles(fields: Accepted, context: Context): Accepted {
  const files = context.files;
  if (files === undefined || files.list.length === 0) return fields;
  files.claimed = true;
  return { ...fields, files: files.list };
}

/**
 * Gives back the files {@linkcode claimFiles} claimed when the row that was to keep them
 * (submission `id`'s: its outbox row, its held row) was not committed, so nothing lists them:
 * withFiles then removes them, under their names as received and as kept for `id`.
 */
function releaseFiles(context: Context, id: string): void {
  const { files } = context;
  if (files === undefined || !files.claimed) return;
  files.claimed = false;
  files.keptFor = id;
}

/**
 * The `case_url` of a success that opened no case (a honeypot hit, a blocked sender's
 * submission), so it looks like any other: a decoy's page (lib/cases/decoy.ts), which reads like
 * a real one, showing `first` (the sender's message), and takes writing that reaches nobody.
 * None while cases are off, nor for a follow-up or a write-back to a decoy (whose success names
 * no case). A submission the spam filter held has a real case. Never rejects: when the decoy
 * cannot be made (its key unread), logged `decoy_failed` and a fresh token's path (a `404`).
 */
async function decoyCase(
  deps: ContactDeps,
  first: { ts: string; message: string } | undefined,
  kind: DecoyKind,
): Promise<string | undefined> {
  const { cases } = deps;
  if (cases === undefined || deps.followUp !== undefined || deps.decoy !== undefined) {
    return undefined;
  }
  try {
    return casePath(await cases.decoy(first, kind));
  } catch (error) {
    deps.log("error", { event: "decoy_failed", error: describeError(error) });
    return casePath(newToken());
  }
}

/**
 * A valid submission from a blocked sender (or held by the spam filter): not queued, not sent,
 * no outbox line; its backup record is written (`"held":"spam"` and the block), and it is
 * answered as a success (the caller answers), like a honeypot hit. One the filter held is kept
 * with a real case opened and its files kept in the same transaction (its record lists them):
 * resolves with its page's path (`undefined`: none, a decoy is answered). Logged as `held_spam`
 * (with its id and the kind of block, never the key), tallied like the refusals. A follow-up the
 * filter held is kept before its record is written: its case may refuse it as it commits (the
 * cap's race, an erasure), and then nothing of it is recorded or kept (`release`: its files).
 */
async function hold(
  deps: ContactDeps,
  fields: Accepted,
  block: Block | "filter",
  release: (id: string) => void,
): Promise<Held> {
  const id = deps.newId();
  const { spamFeatures, ...kept } = fields;
  const submission = {
    ...kept,
    id,
    ...(deps.followUp === undefined ? {} : { followUp: deps.followUp }),
  };
  const keep = () =>
    block === "filter"
      ? _keepHeld(deps, submission, spamFeatures, release)
      : Promise.resolve({ caseUrl: undefined });
  const early = deps.followUp === undefined ? undefined : await keep();
  if (early !== undefined && "refused" in early) return early;
  let stored = true;
  try {
    await deps.append(heldRecord({
      ...fields,
      id,
      spam_score: fields.spamScore,
      follow_up: deps.followUp,
      messenger_ok: false,
      messenger_error: HELD_SPAM_ERROR,
    }, block === "filter" ? undefined : block));
  } catch (error) {
    stored = false;
    deps.log("error", { event: "backup_write_failed", id, error: describeError(error) });
  }
  const held = early ?? await keep();
  deps.onStorage(stored);
  const by = block === "filter" ? "filter" : block.kind;
  deps.log("info", { event: "contact", status: 200, result: "held_spam", id, block: by });
  deps.count?.("held_spam");
  return held;
}

/** What became of a held submission: kept (its case's path, if any), or refused by its case. */
type Held = { readonly caseUrl: string | undefined } | { readonly refused: FollowUpRefusal };

/**
 * A submission the learned spam filter held (`SPAM_FILTER=hold`): kept for its release from the
 * chat (`/held`) with its case opened (a follow-up: posted to its case) in the same transaction,
 * so its page shows it as any other's and the hold is not revealed; its lesson for what a release
 * teaches (`features`: those it was scored by); and its files' rows, named as kept, as an
 * accepted submission's (sent after its notification once released; retention, `forget` and
 * `export --files` reach them while held). Resolves with its case's path (none for a follow-up,
 * nor while cases are off). When nothing was committed its files are given back (`release`); a
 * follow-up its case refused (lib/storage/store.ts `followUpRefusal`) resolves with why, any
 * other failure is logged (`spam_hold_failed`), the record stays and a decoy is answered.
 */
async function _keepHeld(
  deps: ContactDeps,
  submission: OutboxSubmission,
  features: readonly string[] | undefined,
  release: (id: string) => void,
): Promise<Held> {
  try {
    const { calls, caseUrl } = await writtenWith(deps, submission, features);
    // Its release sends it unmarked (without its score): its files are not sent silently either.
    const { spamScore: _score, ...unscored } = submission;
    const files = await keptFiles(deps, unscored);
    await deps.spam?.keepHeld(submission, submission.spamScore ?? 1, [...calls, ...files]);
    return { caseUrl };
  } catch (error) {
    release(submission.id);
    const refused = followUpRefusal(error);
    if (refused !== undefined) return { refused };
    deps.log("error", {
      event: "spam_hold_failed",
      id: submission.id,
      error: describeError(error),
    });
    return { caseUrl: undefined };
  }
}

/**
 * Logs an unexpected error (its description, never the request's data) and answers `500`
 * with the fixed sentence in the request's style (`style`, else the one its body and `Accept`
 * choose): plain text to a browser's form post (it shows it as a page), else JSON.
 */
export function internalError(
  log: Logger,
  request: Request,
  error: unknown,
  style: AnswerStyle = answerStyle(
    isFormKind(bodyKind(request.headers.get("content-type"))),
    request.headers.get("accept"),
    false,
  ),
): Response {
  log("error", { event: "internal_error", status: 500, error: describeError(error) });
  return answersOf(style).error("internal");
}

/**
 * A body whose client went away before its end (lib/http/client_gone.ts `clientGone`: a closed
 * tab, a phone losing its signal, a reset): not an error of contactd's, logged `upload_abandoned`
 * (info, its read's error, nothing of the request) rather than `internal_error`; a post's files
 * are removed as for any refusal. Answered `400 code` (the body never reached its end), which
 * nobody is left to read, with `Connection: close`.
 */
function abandoned(
  log: Logger,
  style: AnswerStyle,
  code: "invalid_multipart" | "invalid_body",
  error: unknown,
): Response {
  log("info", { event: "upload_abandoned", error: describeError(error) });
  return answersOf(style).error(code, { headers: { connection: "close" } });
}

/** Where the page that posted is (lib/form/redirect.ts), for a form's relative targets. */
function pageOf(request: Request, allowedOrigins: readonly string[]): PageOrigin {
  const { headers } = request;
  return pageOrigin(
    headers.get("origin"),
    headers.get("referer"),
    headers.get("host"),
    allowedOrigins,
  );
}

/** The media types a POST may have. */
export type BodyKind = "json" | "form" | "multipart";

/**
 * `json` for `application/json`, `form` for `application/x-www-form-urlencoded`, `multipart` for
 * `multipart/form-data`, parameters such as `; charset=utf-8` allowed, case-insensitive;
 * `undefined` for anything else.
 */
export function bodyKind(header: string | null): BodyKind | undefined {
  if (header === "application/json") return "json"; // the common case, without allocations
  const essence = header?.split(";", 1)[0]?.trim().toLowerCase();
  if (essence === "application/json") return "json";
  if (essence === "application/x-www-form-urlencoded") return "form";
  if (essence === "multipart/form-data") return "multipart";
  return undefined;
}

/** A post from an HTML form (urlencoded or multipart): answered with pages unless it asks for JSON. */
export function isFormKind(kind: BodyKind | undefined): boolean {
  return kind === "form" || kind === "multipart";
}
