/**
 * Redirect targets of no-JavaScript form posts: a relative path on this service's origin, or
 * an absolute URL on an allowed origin. Anything else is refused, so contactd is never an open
 * redirect.
 *
 * @module
 */

/** Validated redirect targets named by a form (see {@linkcode parseRedirectTarget}). */
export interface RedirectTargets {
  /** Where a visitor goes after success. */
  readonly success?: string;
  /** Where a visitor goes after any refusal, with `error=<code>` added. */
  readonly error?: string;
}

/** The longest target accepted, in characters. */
export const REDIRECT_MAX_LENGTH = 1000;

// A placeholder origin for resolving relative paths; ".invalid" can never be a real host.
const BASE = "http://contactd.invalid";
// Printable ASCII only: no spaces, tabs, CR/LF (header injection; the URL parser would silently
// drop tabs and newlines) and no non-ASCII look-alikes. Browsers percent-encode the rest.
const PRINTABLE_ASCII = /^[\x21-\x7E]+$/;

/**
 * The normalised target, or `undefined` when `raw` is not a safe place to send a visitor:
 * a path starting with a single `/` (resolved against the address the form posted to), or an
 * `http(s)` URL without credentials whose origin is in `allowedOrigins`.
 */
export function parseRedirectTarget(
  raw: string | undefined,
  allowedOrigins: readonly string[],
): string | undefined {
  if (
    raw === undefined || raw.length > REDIRECT_MAX_LENGTH || !PRINTABLE_ASCII.test(raw) ||
    // Browsers read "\" as "/" in http(s) URLs, so "/\evil.example" means "//evil.example".
    raw.includes("\\")
  ) {
    return undefined;
  }
  if (raw.startsWith("/")) {
    if (raw.startsWith("//")) return undefined; // scheme-relative: another host
    const url = parse(raw, BASE);
    if (url === undefined || url.origin !== BASE) return undefined;
    const relative = url.pathname + url.search + url.hash;
    // Dot segments can collapse "/a/..//evil.example" into "//evil.example".
    return relative.startsWith("//") ? undefined : relative;
  }
  const url = parse(raw);
  if (
    url === undefined || (url.protocol !== "https:" && url.protocol !== "http:") ||
    url.username !== "" || url.password !== "" || !allowedOrigins.includes(url.origin)
  ) {
    return undefined;
  }
  return url.href;
}

/** A target from {@linkcode parseRedirectTarget} with `error=<code>` set in its query. */
export function withErrorCode(target: string, code: string): string {
  const url = new URL(target, BASE);
  url.searchParams.set("error", code);
  return target.startsWith("/") ? url.pathname + url.search + url.hash : url.href;
}

function parse(text: string, base?: string): URL | undefined {
  try {
    return new URL(text, base);
  } catch {
    return undefined;
  }
}
