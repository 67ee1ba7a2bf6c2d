/**
 * Redirect targets of no-JavaScript form posts: a relative path on the origin of the page that
 * posted the form (an allowed origin, or this service's own), or an absolute URL on an allowed
 * origin. Anything else is refused, so contactd is never an open redirect.
 *
 * @module
 */

/** Validated redirect targets named by a form (see {@linkcode redirectTargets}). */
export interface RedirectTargets {
  /** Where a visitor goes after success. */
  readonly success?: string;
  /** Where a visitor goes after any refusal, with `error=<code>` added. */
  readonly error?: string;
  /**
   * A relative target the form named that could not be resolved (the page is on another origin
   * that is not allowed): the sentence for the site's owner, shown on the plain-text answer.
   */
  readonly unresolved?: string;
}

/** Where the page that posted a form is, for resolving its relative targets. */
export type PageOrigin =
  /** This service's own origin, or not known (no `Origin`, no `Referer`): a path stays a path. */
  | { readonly kind: "here" }
  /** An allowed origin: a path is resolved against it. */
  | { readonly kind: "allowed"; readonly origin: string }
  /** Another origin, not allowed: a path cannot be resolved safely. */
  | { readonly kind: "foreign"; readonly origin: string };

const HERE: PageOrigin = { kind: "here" };

/**
 * The page's origin: the request's `Origin`, else the origin of its `Referer`. `allowed` when it
 * is in `allowedOrigins`; `here` when there is neither header or its host is the request's `Host`
 * (the form is on contactd's own site); `foreign` otherwise.
 */
export function pageOrigin(
  origin: string | null,
  referer: string | null,
  host: string | null,
  allowedOrigins: readonly string[],
): PageOrigin {
  const page = origin ?? (referer === null ? undefined : parse(referer)?.origin);
  if (page === undefined) return HERE;
  if (allowedOrigins.includes(page)) return { kind: "allowed", origin: page };
  const url = parse(page);
  if (host !== null && url !== undefined && url.host === host.toLowerCase()) return HERE;
  return { kind: "foreign", origin: page };
}

/**
 * The targets a form named, by field (`_redirect`, else Formspree's `_next`, for success;
 * `_redirect_error`), each checked by {@linkcode parseRedirectTarget} and a path resolved
 * against the page's origin: an allowed origin's absolute URL, a path on contactd's own site
 * as is. A path from a page on a `foreign` origin is not used: `unresolved` says so.
 */
export function redirectTargets(
  named: Readonly<Record<"_redirect" | "_next" | "_redirect_error", string | undefined>>,
  allowedOrigins: readonly string[],
  page: PageOrigin = HERE,
): RedirectTargets {
  const successField = named._redirect === undefined ? "_next" : "_redirect";
  const targets: { success?: string; error?: string; unresolved?: string } = {};
  for (
    const [kind, field] of [["success", successField], ["error", "_redirect_error"]] as const
  ) {
    const target = parseRedirectTarget(named[field], allowedOrigins);
    if (target === undefined) continue;
    if (!target.startsWith("/") || page.kind === "here") targets[kind] = target;
    else if (page.kind === "allowed") targets[kind] = new URL(target, page.origin).href;
    else targets.unresolved ??= unresolvedNote(field, target, page.origin);
  }
  return targets;
}

/** The sentence for the site's owner about a path that cannot be resolved. */
function unresolvedNote(field: string, path: string, origin: string): string {
  return `(For the site's owner: this form's ${field} "${path}" was not used. The form is on ` +
    `${origin.slice(0, 100)}, which ALLOWED_ORIGINS does not list: write the full address ` +
    `(https://your-site${path}) and list your site in ALLOWED_ORIGINS.)`;
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
 * a path starting with a single `/` (resolved by {@linkcode redirectTargets}), or an
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
