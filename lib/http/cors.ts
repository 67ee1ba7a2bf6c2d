/**
 * Other origins: with `ALLOWED_ORIGINS` set, CORS for the listed origins on `/api/contact` and
 * a refusal for any other `Origin`. Unset, nothing changes: no CORS headers, no check.
 *
 * @module
 */
import { errorResponse, NO_HEADERS } from "./responses.ts";

/** What a request's `Origin` header means for it. */
export type OriginCheck =
  | { readonly kind: "unchecked" }
  | { readonly kind: "allowed"; readonly origin: string }
  | { readonly kind: "refused"; readonly origin: string };

/**
 * `unchecked` when no origins are configured or the header is absent (same-origin GETs,
 * curl, server-side posts), `allowed` when listed, `refused` otherwise (including `null`).
 */
export function checkOrigin(header: string | null, allowed: readonly string[]): OriginCheck {
  if (allowed.length === 0 || header === null) return { kind: "unchecked" };
  return allowed.includes(header)
    ? { kind: "allowed", origin: header }
    : { kind: "refused", origin: header };
}

/** Headers for an answer: the allowed origin (never credentials), and `Vary` while enabled. */
export function corsHeaders(
  check: OriginCheck,
  allowed: readonly string[],
): Readonly<Record<string, string>> {
  if (check.kind === "allowed") {
    return {
      "access-control-allow-origin": check.origin,
      // A script on the other origin needs Retry-After to say when to try again.
      "access-control-expose-headers": "Retry-After",
      vary: "Origin",
    };
  }
  return allowed.length === 0 ? NO_HEADERS : VARY_ORIGIN;
}

const VARY_ORIGIN: Readonly<Record<string, string>> = Object.freeze({ vary: "Origin" });

/**
 * The request headers a cross-origin script may send: `Content-Type` (JSON), and those
 * `@formspree/core` adds (`Formspree-Client`, and `Formspree-Session-Data` in a browser), whose
 * values contactd ignores. `Accept` needs no preflight.
 */
export const ALLOWED_HEADERS = "Content-Type, Formspree-Client, Formspree-Session-Data";

/** `OPTIONS /api/contact` (and every form's path): the preflight of a cross-origin script's post. */
export function preflightResponse(request: Request, allowed: readonly string[]): Response {
  const check = checkOrigin(request.headers.get("origin"), allowed);
  if (check.kind === "refused") {
    return errorResponse("origin_not_allowed", { headers: corsHeaders(check, allowed) });
  }
  const headers: Record<string, string> = {
    allow: "POST, OPTIONS",
    "cache-control": "no-store",
    ...corsHeaders(check, allowed),
  };
  if (check.kind === "allowed") {
    headers["access-control-allow-methods"] = "POST";
    headers["access-control-allow-headers"] = ALLOWED_HEADERS;
    headers["access-control-max-age"] = "600";
  }
  return new Response(null, { status: 204, headers });
}
