/**
 * Cleaning what a sender typed: single-line fields (no control, line-separator or bidi
 * characters), the multi-line message, and counting characters as code points.
 *
 * @module
 */

/** Counts Unicode code points; a lone surrogate counts as one. */
export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

// Control characters, line/paragraph separators and bidi controls could fake or reorder the
// header lines of the notification, so single-line fields lose them.
const SINGLE_LINE_UNSAFE = /[\p{Cc}\u2028\u2029\u200E\u200F\u202A-\u202E\u2066-\u2069\u061C]/gu;
// The message keeps line breaks and tabs; other control characters (NUL, escapes) go.
// deno-lint-ignore no-control-regex -- matching control characters is the point
const MULTI_LINE_UNSAFE = /[\0-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]/g;

/**
 * A single-line field as stored: well-formed, control and bidi characters replaced by spaces,
 * trimmed. `thorough` skips the shortcut for printable ASCII (tests compare the two ways).
 */
export function cleanSingleLine(text: string, thorough = false): string {
  // Printable ASCII is what forms mostly send, and nothing in it is replaced: the
  // well-formed copy and the regular-expression pass would only copy it.
  if (!thorough && _isPrintableAscii(text, false)) return text.trim();
  return text.toWellFormed().replace(SINGLE_LINE_UNSAFE, " ").trim();
}

const CRLF = /\r\n?/g;

/**
 * The message as stored: well-formed, line breaks as `\n`, tabs kept, other control characters
 * dropped, trimmed. `thorough` skips the shortcut for printable ASCII with tabs and `\n`.
 */
export function cleanMultiLine(text: string, thorough = false): string {
  if (!thorough && _isPrintableAscii(text, true)) return text.trim();
  return text.toWellFormed().replace(CRLF, "\n").replace(MULTI_LINE_UNSAFE, "").trim();
}

/** Only U+0020 to U+007E (and, for a message, tab and line feed): nothing a cleaner changes. */
function _isPrintableAscii(text: string, multiLine: boolean): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 || c > 0x7e) && !(multiLine && (c === 0x0a || c === 0x09))) return false;
  }
  return true;
}
