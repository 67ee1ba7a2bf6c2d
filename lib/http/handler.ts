/**
 * Routing, the `Host` check, health, and the last line of defence against unexpected errors.
 *
 * @module
 */
import { type ContactDeps, handleContact, internalError, type PeerInfo } from "./contact.ts";
import { BODY_TIMEOUT_MS } from "./body.ts";
import { checkOrigin, corsHeaders, preflightResponse } from "./cors.ts";
import { clientAddress, ProxyNotice } from "../net/client_address.ts";
import { parseIp } from "../common/ip.ts";
import type { DeliveryStatus } from "../delivery/health.ts";
import { outcome } from "../log/tally.ts";
import { type RateLimiter, rateLimitKey } from "../net/rate_limit.ts";
import { sharedDeadline } from "./deadline.ts";
import { errorResponse, jsonResponse, NO_STORE } from "./responses.ts";
import { examplePageResponse } from "./example_page.ts";
import { CASE_METHODS, type CaseDesk, casePageLimiter, handleCase } from "./case_route.ts";
import { CASE_PREFIX } from "../cases/token.ts";

/** The dependencies of the whole HTTP surface. */
export type HandlerDeps = Omit<ContactDeps, "onStorage" | "bodyDeadline" | "allowedOrigins"> & {
  /** `ALLOWED_ORIGINS`; empty or absent means no CORS and no `Origin` check. */
  readonly allowedOrigins?: readonly string[];
  /**
   * Body-read deadlines; default: one shared 10 s signal per second of arrival, each ending at
   * the stop too (`stopping`).
   */
  readonly bodyDeadline?: ContactDeps["bodyDeadline"];
  /**
   * `FORMS`: the extra forms, each served at `POST /api/contact/<id>` with its own
   * `ALLOWED_ORIGINS` (lib/config/config.ts `FormConfig`); `POST /api/contact` is the default form.
   */
  readonly forms?: readonly {
    readonly id: string;
    readonly allowedOrigins: readonly string[];
    /** `FORM_<ID>_ATTACHMENTS` (with `attachments`); absent: the default form's. */
    readonly attachmentBytes?: number;
  }[];
  /** The example form's bytes, served at `/`; absent unless `SERVE_EXAMPLE=1`. */
  readonly examplePage?: Uint8Array | undefined;
  /**
   * The budget of `GET /api/challenge` (which exists while `challenge.issue` does), apart from
   * the POSTs' so fetching challenges cannot lock a visitor out of posting.
   */
  readonly challengeLimiter?: RateLimiter | undefined;
  /**
   * The delivery's state and the messages waiting in the outbox, for health (the queue's
   * `status()` and the outbox's pending count). Absent: `ok` while configured, else `paused`.
   */
  readonly deliveryStatus?: () => DeliveryReport;
  /**
   * The case pages (lib/cases/case_book.ts `CaseBook`): each accepted submission opens one,
   * served at `/api/case/<token>` (lib/http/case_route.ts). Absent: no cases, no such route.
   */
  readonly cases?: CaseDesk | undefined;
  /** The budget of case page reads; default {@linkcode casePageLimiter}'s. */
  readonly caseLimiter?: RateLimiter | undefined;
  /**
   * Whether the database is lost (its worker ended: lib/storage/store.ts `WorkerStore`): health
   * is not `ok` from then on, while the service stops. Absent: never.
   */
  readonly databaseLost?: () => boolean;
};

/**
 * What health reports about delivery: the queue's state (lib/delivery/health.ts: `paused` is a
 * settings problem only the operator can fix) and the messages stored and not delivered yet.
 */
export type DeliveryReport = DeliveryStatus & { readonly pending: number };

/** The body of `GET /api/health`. */
export interface Health {
  /** False while the disk fails or delivery is paused: the service cannot do its job. */
  readonly ok: boolean;
  /** Both the token and the chat id are set (the spec's meaning). */
  readonly configured: boolean;
  readonly delivery: DeliveryStatus["state"];
  readonly pending: number;
}

/** A `Deno.serve` handler with health state of its own. */
export type Handler = (request: Request, info: PeerInfo) => Response | Promise<Response>;

/**
 * The health answer: `200` when `ok`, else `503` (monitoring tools read the status first), never
 * cached. `ok` is false while the backup file or outbox cannot be written (or the database is
 * lost), and while delivery is paused (a settings problem, or the messenger not set).
 */
export function healthOf(
  storageOk: boolean,
  configured: boolean,
  delivery: DeliveryReport | undefined,
): { readonly status: 200 | 503; readonly body: Health } {
  const state = delivery?.state ?? (configured ? "ok" : "paused");
  const ok = storageOk && state !== "paused";
  return {
    status: ok ? 200 : 503,
    body: { ok, configured, delivery: state, pending: delivery?.pending ?? 0 },
  };
}

/**
 * Builds the request handler. Health `ok` is false while the backup file cannot be written, and
 * once the database is lost.
 */
export function createHandler(deps: HandlerDeps): Handler {
  let storageOk = true;
  const allowedOrigins = deps.allowedOrigins ?? [];
  const contactDeps: ContactDeps = {
    ...deps,
    allowedOrigins,
    bodyDeadline: deps.bodyDeadline ?? sharedDeadline(BODY_TIMEOUT_MS, 1000, deps.stopping),
    proxyNotice: deps.proxyNotice ?? new ProxyNotice(),
    onStorage: (ok) => (storageOk = ok),
  };
  const { examplePage, challengeLimiter } = deps;
  const cases = deps.cases === undefined
    ? undefined
    : { ...contactDeps, cases: deps.cases, caseLimiter: deps.caseLimiter ?? casePageLimiter() };
  const issue = deps.challenge?.issue?.bind(deps.challenge);
  // The challenge is the service's, for every form: every form's origins may fetch one.
  const challengeOrigins = [
    ...new Set([...allowedOrigins, ...(deps.forms ?? []).flatMap((form) => form.allowedOrigins)]),
  ];
  // Each form at its own path, with its origins; the rate limiter is the one of every form.
  // Each is also at Formspree's path, `/api/f/<id>` (`default`: the default form), for
  // `@formspree/core` with `endpoint: "https://<site>/api"`.
  const forms = new Map<string, ContactDeps>([
    ["/api/contact", contactDeps],
    ["/api/f/default", { ...contactDeps, formspree: true }],
  ]);
  for (const form of deps.forms ?? []) {
    const formDeps = {
      ...contactDeps,
      allowedOrigins: form.allowedOrigins,
      form: form.id,
      ...(deps.attachments === undefined || form.attachmentBytes === undefined
        ? {}
        : { attachments: { ...deps.attachments, maxBytes: form.attachmentBytes } }),
    };
    forms.set(`/api/contact/${form.id}`, formDeps);
    forms.set(`/api/f/${form.id}`, { ...formDeps, formspree: true });
  }
  // OPTIONS (the CORS preflight) exists only while other origins are allowed.
  const methodsOf = (form: ContactDeps) =>
    form.allowedOrigins.length > 0 ? ["POST", "OPTIONS"] : ["POST"];
  const routes: Readonly<Record<string, readonly string[]>> = {
    ...Object.fromEntries([...forms].map(([path, form]) => [path, methodsOf(form)])),
    "/api/health": ["GET", "HEAD"],
    ...(examplePage === undefined ? {} : { "/": ["GET", "HEAD"] }),
    ...(issue === undefined || challengeLimiter === undefined ? {} : { "/api/challenge": ["GET"] }),
  };

  // Not async: the contact pipeline's answer (a promise that never rejects) is handed on as is.
  return (request, info) => {
    try {
      const host = request.headers.get("host");
      if (host !== null && !isValidHost(host)) {
        // RFC 9112 §3.2: 400 on every route. Tallied: a flood of them is one summary line.
        outcome(deps.log, 400, "invalid_host");
        return errorResponse("invalid_host");
      }
      const path = pathOf(request.url, host);
      if (cases !== undefined && path.startsWith(CASE_PREFIX)) {
        if (!CASE_METHODS.includes(request.method)) {
          return errorResponse("method_not_allowed", {
            headers: { allow: CASE_METHODS.join(", ") },
          });
        }
        return handleCase(cases, path, request, info);
      }
      const methods = Object.hasOwn(routes, path) ? routes[path] : undefined;
      if (methods === undefined) return errorResponse("not_found");
      if (!methods.includes(request.method)) {
        return errorResponse("method_not_allowed", { headers: { allow: methods.join(", ") } });
      }
      if (path === "/api/health") {
        const health = healthOf(
          storageOk && deps.databaseLost?.() !== true,
          deps.queue !== undefined,
          deps.deliveryStatus?.(),
        );
        return jsonResponse(health.status, health.body, NO_STORE);
      }
      if (path === "/" && examplePage !== undefined) {
        return examplePageResponse(examplePage, request.method);
      }
      if (path === "/api/challenge" && issue !== undefined && challengeLimiter !== undefined) {
        return challengeResponse(deps, challengeOrigins, challengeLimiter, issue, request, info);
      }
      const form = forms.get(path);
      if (form === undefined) return errorResponse("not_found"); // every other path is routed above
      if (request.method === "OPTIONS") {
        const response = preflightResponse(request, form.allowedOrigins);
        // A refused preflight is the only trace of a misconfigured embedding site: name it.
        const origin = response.status === 403 ? request.headers.get("origin") : null;
        deps.log("info", {
          event: "preflight",
          status: response.status,
          ...(origin === null
            ? {}
            : { result: "origin_not_allowed", origin: origin.slice(0, 100) }),
        });
        return response;
      }
      return handleContact(form, request, info);
    } catch (error) {
      return internalError(deps.log, request, error);
    }
  };
}

/**
 * `GET /api/challenge`: the origin check and CORS of the POST against the origins of every form
 * (`allowedOrigins`: `ALLOWED_ORIGINS` and each `FORM_<ID>_ALLOWED_ORIGINS`, none listed: no
 * check), its own rate limit, then a fresh challenge as JSON, never cached. A promise that never
 * rejects.
 */
function challengeResponse(
  deps: HandlerDeps,
  allowedOrigins: readonly string[],
  limiter: RateLimiter,
  issue: (nowMs: number) => Promise<unknown>,
  request: Request,
  info: PeerInfo,
): Response | Promise<Response> {
  const nowMs = deps.now();
  const origin = checkOrigin(
    allowedOrigins.length === 0 ? null : request.headers.get("origin"),
    allowedOrigins,
  );
  const cors = corsHeaders(origin, allowedOrigins);
  if (origin.kind === "refused") {
    deps.log("info", {
      event: "challenge",
      status: 403,
      result: "origin_not_allowed",
      origin: origin.origin.slice(0, 100),
    });
    return errorResponse("origin_not_allowed", { headers: cors });
  }
  const ip = clientAddress(
    info.remoteAddr.hostname,
    request.headers,
    deps.trustedProxies,
    deps.realIpHeader,
  );
  const decision = limiter.take(rateLimitKey(ip), nowMs);
  if (!decision.allowed) {
    outcome(deps.log, 429, "challenge_rate_limited");
    return errorResponse("rate_limited", {
      headers: { ...cors, "retry-after": String(decision.retryAfterSeconds) },
    });
  }
  return issue(nowMs).then(
    // Built directly: each challenge is unique, so it must not take a slot of the answer cache.
    (challenge) =>
      new Response(JSON.stringify(challenge), {
        headers: { "content-type": "application/json", ...NO_STORE, ...cors },
      }),
    (error) => internalError(deps.log, request, error),
  );
}

/**
 * `Host = uri-host [ ":" port ]` (RFC 9112 §3.2, RFC 3986 §3.2.2): a reg-name (unreserved,
 * sub-delims, `%XX`), an IPv4 address (a reg-name by syntax), or an IPv6 or IPvFuture literal in
 * brackets; the port digits only. Empty is valid (a target without authority).
 */
const HOST = new RegExp(
  "^(?:\\[(?:([0-9A-Fa-f:.]+)|v[0-9A-Fa-f]+\\.[A-Za-z0-9._~!$&'()*+,;=:-]+)\\]|" +
    "(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*)(?::([0-9]*))?$",
);

/**
 * True when `host` is a valid `Host` field value: an IPv6 literal must parse as one, and a port
 * must be one (at most 65535).
 */
export function isValidHost(host: string): boolean {
  const match = HOST.exec(host);
  if (match === null) return false;
  const [, ipv6, port] = match;
  if (port !== undefined && !(port.length <= 5 && Number(port) <= 65535)) return false;
  return ipv6 === undefined || (ipv6.includes(":") && parseIp(ipv6) !== null);
}

/**
 * The request's path, as `new URL(url).pathname` would give it, without depending on the
 * `Host` header being parseable (`Host: [bad` makes `new URL(request.url)` throw).
 *
 * Deno builds `request.url` as `scheme://` + authority + request-target, the authority being
 * the `Host` header as sent (or the absolute-form target's authority, or `localhost:port`).
 * The target is what follows that authority; it is resolved against a fixed valid origin, so
 * dot segments and backslashes normalise as before. `""` (routed nowhere) when no target can
 * be found or it does not start with `/` (`OPTIONS *`). Never throws.
 */
export function pathOf(url: string, host: string | null): string {
  const scheme = url.indexOf("://");
  if (scheme < 0) return "";
  const authority = scheme + 3;
  // The Host text may itself hold "/", "?" or "#": skip it whole when it is the authority.
  const start = host !== null && host !== "" && url.startsWith(host, authority)
    ? authority + host.length
    : url.indexOf("/", authority);
  if (start < 0 || url.charCodeAt(start) !== 47) return ""; // "/"
  const target = url.slice(start);
  let path = paths.get(target);
  if (path === undefined) {
    try {
      path = new URL(`http://h${target}`).pathname;
    } catch {
      path = "";
    }
    if (paths.size >= MAX_PATHS) paths.clear();
    paths.set(target, path);
  }
  return path;
}

// The same few targets (two paths) arrive over and over: resolve each once. Keyed by the exact
// target text, so the answer is always what `new URL` says; cleared when full.
const paths = new Map<string, string>();
const MAX_PATHS = 256;
