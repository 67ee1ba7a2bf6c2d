/**
 * `POST /api/contact`: the rules in the order they apply.
 *
 * @module
 */
import { type Answers, formAnswers, jsonAnswers } from "./answer.ts";
import { type Appender, formatRecord, formatTimestamp } from "./backup.ts";
import { BODY_LIMIT, readBody } from "./body.ts";
import { clientAddress } from "./client_address.ts";
import { checkOrigin, corsHeaders } from "./cors.ts";
import { parseFormPost } from "./form_post.ts";
import type { Cidr } from "./ip.ts";
import { describeError, type Logger } from "./log.ts";
import { formatNotification } from "./notification.ts";
import { type RateLimiter, rateLimitKey } from "./rate_limit.ts";
import { decodeJson, parseSubmission, type SubmissionResult } from "./submission.ts";
import type { DeliveryResult } from "./telegram.ts";

/** Everything the contact pipeline touches outside itself. */
export interface ContactDeps {
  /** The clock; read once per request. */
  readonly now: () => Date;
  readonly trustedProxies: readonly Cidr[];
  readonly limiter: RateLimiter;
  /** Sends the notification text; `undefined` while the messenger is not configured. */
  readonly deliver: ((text: string) => Promise<DeliveryResult>) | undefined;
  /** Appends one whole line to the backup file, synced. */
  readonly append: Appender["append"];
  readonly log: Logger;
  /** Told whether the last backup write worked (health reports it). */
  readonly onStorage: (ok: boolean) => void;
  /** `ALLOWED_ORIGINS`; empty or absent means no CORS and no `Origin` check. */
  readonly allowedOrigins?: readonly string[];
  /**
   * Hands out the signal that aborts when the request body has taken too long; called once per
   * admitted POST with the request's time. createHandler defaults it to one shared signal per
   * second (lib/deadline.ts).
   */
  readonly bodyDeadline: (nowMs: number) => AbortSignal;
}

/** The TCP peer as `Deno.serve` reports it. */
export interface PeerInfo {
  readonly remoteAddr: { readonly hostname: string };
}

/** Handles one `POST /api/contact`. */
export async function handleContact(
  deps: ContactDeps,
  request: Request,
  info: PeerInfo,
): Promise<Response> {
  const now = deps.now();
  const nowMs = now.getTime();
  const allowedOrigins = deps.allowedOrigins ?? [];
  const kind = bodyKind(request.headers.get("content-type"));
  // Without ALLOWED_ORIGINS the header is not even read (checkOrigin ignores it then).
  const origin = checkOrigin(
    allowedOrigins.length === 0 ? null : request.headers.get("origin"),
    allowedOrigins,
  );
  const cors = corsHeaders(origin, allowedOrigins);
  // Form posts come from browsers without JavaScript: they get pages, not JSON.
  let answer: Answers = kind === "form" ? formAnswers(cors) : jsonAnswers(cors);

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

  const ip = clientAddress(info.remoteAddr.hostname, request.headers, deps.trustedProxies);
  const decision = deps.limiter.take(rateLimitKey(ip), nowMs);
  if (!decision.allowed) {
    outcome(deps, 429, "rate_limited");
    return answer.error("rate_limited", {
      headers: { "retry-after": String(decision.retryAfterSeconds) },
    });
  }

  // One limit for every body, the reverse proxy's (client_max_body_size 16k).
  const body = await readBody(request, BODY_LIMIT, deps.bodyDeadline(nowMs));
  if (!body.ok && body.reason === "timeout") {
    outcome(deps, 408, "request_timeout");
    return answer.error("request_timeout", { headers: { connection: "close" } });
  }
  if (!body.ok) {
    outcome(deps, 413, "too_large");
    return answer.error("payload_too_large", { headers: { connection: "close" } });
  }
  if (kind === undefined) {
    outcome(deps, 415, "unsupported_media_type");
    return answer.error("unsupported_media_type");
  }

  let parsed: SubmissionResult;
  if (kind === "form") {
    const post = parseFormPost(body.bytes, allowedOrigins);
    answer = formAnswers(cors, post.targets);
    parsed = post.result;
  } else {
    const decoded = decodeJson(body.bytes);
    parsed = "ok" in decoded ? parseSubmission(decoded.value) : decoded;
  }
  if (parsed.kind === "honeypot") {
    outcome(deps, 200, "honeypot");
    return answer.success();
  }
  if (parsed.kind === "invalid") {
    outcome(deps, 400, parsed.code);
    return answer.error(parsed.code, {
      ...(parsed.field === undefined ? {} : { field: parsed.field }),
      ...(parsed.message === undefined ? {} : { message: parsed.message }),
    });
  }

  const ts = formatTimestamp(now);
  const { name, contact, message } = parsed.submission;
  const delivery: DeliveryResult = deps.deliver === undefined
    ? { ok: false, error: "not configured" }
    : await deps.deliver(formatNotification({ name, contact, message, ip, ts }));
  if (!delivery.ok && delivery.migrateToChatId !== undefined) {
    deps.log("warn", {
      event: "chat_migrated",
      hint: "set MESSENGER_CHAT_ID to new_chat_id",
      new_chat_id: delivery.migrateToChatId,
    });
  }

  const line = formatRecord({
    ts,
    name,
    contact,
    message,
    ip,
    messenger_ok: delivery.ok,
    messenger_error: delivery.ok ? null : delivery.error,
  });
  let stored = true;
  try {
    await deps.append(line);
    deps.onStorage(true);
  } catch (error) {
    stored = false;
    deps.onStorage(false);
    deps.log("error", { event: "backup_write_failed", error: describeError(error) });
  }

  if (delivery.ok) {
    // Delivered: the sender's message reached the owner, so success is the truth even if the
    // backup failed (logged above, and health turns ok:false until a write works again).
    outcome(deps, 200, stored ? "delivered" : "delivered_not_stored");
    return answer.success();
  }
  deps.log("warn", { event: "delivery_failed", error: delivery.error });
  if (!stored) {
    outcome(deps, 500, "lost");
    return answer.error("internal");
  }
  const code = deps.deliver === undefined ? "not_configured" : "delivery_failed";
  outcome(deps, code === "not_configured" ? 503 : 502, code);
  return answer.error(code);
}

/** Logs how a request ended (main.ts tallies the refusals instead of writing a line each). */
function outcome(deps: ContactDeps, status: number, result: string): void {
  deps.log("info", { event: "contact", status, result });
}

/**
 * `json` for `application/json`, `form` for `application/x-www-form-urlencoded`, parameters
 * such as `; charset=utf-8` allowed, case-insensitive; `undefined` for anything else.
 */
export function bodyKind(header: string | null): "json" | "form" | undefined {
  if (header === "application/json") return "json"; // the common case, without allocations
  const essence = header?.split(";", 1)[0]?.trim().toLowerCase();
  if (essence === "application/json") return "json";
  if (essence === "application/x-www-form-urlencoded") return "form";
  return undefined;
}
