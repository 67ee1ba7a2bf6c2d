/**
 * Scrubbing a secret (the bot token) out of text before it is logged or
 * returned, because Deno's fetch errors quote the full request URL.
 *
 * @module
 */

/** What every occurrence of the secret is replaced with. */
export const REDACTED = "<redacted>";

/**
 * Replaces every occurrence of `secret` in `text` with `"<redacted>"`, both
 * verbatim and URL-encoded (e.g. `":"` as `%3A`, hex digits in either case).
 * An empty secret leaves the text unchanged.
 *
 * @example
 * ```ts
 * redact("GET /bot12:AB/getMe", "12:AB"); // "GET /bot<redacted>/getMe"
 * ```
 */
export function redact(text: string, secret: string): string {
  return redactor(secret)(text);
}

/**
 * {@linkcode redact} for one secret, with its pattern built once (for the logger's hot path).
 */
export function redactor(secret: string): (text: string) => string {
  if (secret === "") return (text) => text;
  const forms: string[] = [];
  const encoded = encodeOrUndefined(secret);
  if (encoded !== undefined && encoded !== secret) {
    // URL serialisers may use lower-case hex, so match %3a as well as %3A.
    forms.push(
      escapeRegExp(encoded).replace(
        /%[0-9A-F]{2}/g,
        (escape) => escape.replace(/[A-F]/g, (digit) => `[${digit}${digit.toLowerCase()}]`),
      ),
    );
  }
  // The encoded form goes first: it is the longer one (e.g. "a%" vs "a%25"), so it must win.
  forms.push(escapeRegExp(secret));
  const pattern = new RegExp(forms.join("|"), "g");
  return (text) => text.replace(pattern, REDACTED);
}

/** `encodeURIComponent` throws on lone surrogates; such a secret just has no encoded form. */
function encodeOrUndefined(secret: string): string | undefined {
  try {
    return encodeURIComponent(secret);
  } catch {
    return undefined;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
