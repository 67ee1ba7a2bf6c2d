/**
 * `POST /api/contact`: the rules in the order they apply.
 *
 * @module
 */
import { type Appender, formatRecord, formatTimestamp } from "./backup.ts";
import { BODY_LIMIT, BODY_TIMEOUT_MS, readBody } from "./body.ts";
import { clientAddress } from "./client_address.ts";
import { errorResponse, jsonResponse } from "./errors.ts";
import type { Cidr } from "./ip.ts";
import { describeError, type Logger } from "./log.ts";
import { formatNotification } from "./notification.ts";
import { type RateLimiter, rateLimitKey } from "./rate_limit.ts";
import { decodeJson, parseSubmission } from "./submission.ts";
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
  /**
   * A signal that aborts when the request body has taken too long; called once per admitted
   * POST. Default: `AbortSignal.timeout(BODY_TIMEOUT_MS)`. Tests pass their own.
   */
  readonly bodyDeadline?: () => AbortSignal;
}

/** The TCP peer as `Deno.serve` reports it. */
export interface PeerInfo {
  readonly remoteAddr: { readonly hostname: string };
}

/** The byte-identical answer for real successes and honeypot hits. */
export function success(): Response {
  return jsonResponse(200, { ok: true });
}

/** Handles one `POST /api/contact`. */
export async function handleContact(
  deps: ContactDeps,
  request: Request,
  info: PeerInfo,
): Promise<Response> {
  const now = deps.now();
  const ip = clientAddress(info.remoteAddr.hostname, request.headers, deps.trustedProxies);
  const outcome = (status: number, result: string) =>
    deps.log("info", { event: "contact", status, result });

  const decision = deps.limiter.take(rateLimitKey(ip), now.getTime());
  if (!decision.allowed) {
    outcome(429, "rate_limited");
    return errorResponse("rate_limited", {
      headers: { "retry-after": String(decision.retryAfterSeconds) },
    });
  }

  const deadline = deps.bodyDeadline?.() ?? AbortSignal.timeout(BODY_TIMEOUT_MS);
  const body = await readBody(request, BODY_LIMIT, deadline);
  if (!body.ok && body.reason === "timeout") {
    outcome(408, "request_timeout");
    return errorResponse("request_timeout", { headers: { connection: "close" } });
  }
  if (!body.ok) {
    outcome(413, "too_large");
    return errorResponse("payload_too_large", { headers: { connection: "close" } });
  }
  if (!isJsonContentType(request.headers.get("content-type"))) {
    outcome(415, "unsupported_media_type");
    return errorResponse("unsupported_media_type");
  }

  const decoded = decodeJson(body.bytes);
  const parsed = "ok" in decoded ? parseSubmission(decoded.value) : decoded;
  if (parsed.kind === "honeypot") {
    outcome(200, "honeypot");
    return success();
  }
  if (parsed.kind === "invalid") {
    outcome(400, parsed.code);
    return errorResponse(parsed.code, {
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
    outcome(200, stored ? "delivered" : "delivered_not_stored");
    return success();
  }
  deps.log("warn", { event: "delivery_failed", error: delivery.error });
  if (!stored) {
    outcome(500, "lost");
    return errorResponse("internal");
  }
  const code = deps.deliver === undefined ? "not_configured" : "delivery_failed";
  outcome(code === "not_configured" ? 503 : 502, code);
  return errorResponse(code);
}

/** `application/json`, with parameters such as `; charset=utf-8` allowed; case-insensitive. */
export function isJsonContentType(header: string | null): boolean {
  if (header === null) return false;
  const essence = header.split(";", 1)[0]?.trim().toLowerCase();
  return essence === "application/json";
}
