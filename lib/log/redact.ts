/**
 * Scrubbing a secret (the bot token) out of text before it is logged, stored or returned, in
 * every form it can take: verbatim, URL-encoded once or twice, broken by line breaks, in part.
 *
 * @module
 */

/** What every occurrence of the secret is replaced with. */
export const REDACTED = "<redacted>";

/**
 * The shortest run of the secret's characters that counts as a leak. A bot token's secret part
 * has 35 random characters: 8 of them in a row do not happen by chance in a log line, and fewer
 * than 28 left unredacted cannot be guessed.
 */
export const MIN_RUN = 8;

/**
 * Replaces every occurrence of `secret` in `text` with `"<redacted>"`; see {@linkcode redactor}.
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
 * A function that redacts `secret` from a text, its matcher built once (for the logger's hot
 * path). It replaces every run of at least {@linkcode MIN_RUN} consecutive characters of the
 * secret part (all of it when shorter), where each character may be written as itself (letters
 * in either case), percent-encoded (`%3A`) or percent-encoded twice (`%253A`), and line breaks
 * may sit between them (a newline, a JSON `\n`, `%0A`). For a bot token `<digits>:<secret>` the
 * secret part is what follows the colon (the digits are the bot's public id), and a run starting
 * at the secret's first character takes the digits and colon before it along. An empty secret
 * leaves the text unchanged.
 */
export function redactor(secret: string): (text: string) => string {
  if (secret === "") return (text) => text;
  const atoms = Array.from(secret, atomOf);
  const colon = /^\d+:./.test(secret) ? secret.indexOf(":") : -1;
  // Atoms before `start` are the public id and its colon; they only extend a run.
  const start = colon + 1;
  const minRun = Math.min(MIN_RUN, atoms.length - start);
  // The atoms a run may start with, by the first code unit of one of their forms.
  const byFirst = new Map<number, number[]>();
  atoms.forEach((atom, index) => {
    for (const form of atom) {
      const first = fold(form.charCodeAt(0));
      const list = byFirst.get(first) ?? [];
      if (list.at(-1) !== index) list.push(index);
      byFirst.set(first, list);
    }
  });
  return (text) => {
    let result = "";
    let copied = 0;
    for (let at = 0; at < text.length;) {
      const end = longestRun(
        text,
        at,
        atoms,
        byFirst.get(fold(text.charCodeAt(at))),
        start,
        minRun,
      );
      if (end === undefined) {
        at++;
        continue;
      }
      result += text.slice(copied, at) + REDACTED;
      copied = at = end;
    }
    return copied === 0 ? text : result + text.slice(copied);
  };
}

/**
 * The end of the longest run at `at` that holds at least `minRun` atoms at or after `start`,
 * or `undefined`.
 */
function longestRun(
  text: string,
  at: number,
  atoms: readonly (readonly string[])[],
  candidates: readonly number[] | undefined,
  start: number,
  minRun: number,
): number | undefined {
  let best: number | undefined;
  for (const first of candidates ?? []) {
    let secretAtoms = 0;
    let position = at;
    let end: number | undefined;
    for (let index = first; index < atoms.length; index++) {
      const from = index === first ? position : skipBreaks(text, position);
      const next = matchAtom(text, from, atoms[index]!);
      if (next === undefined) break;
      position = next;
      if (index >= start) secretAtoms++;
      if (secretAtoms >= minRun) end = position;
    }
    if (end !== undefined && (best === undefined || end > best)) best = end;
  }
  return best;
}

/** Where one of `forms` ends when it starts at `at` (ASCII letters in either case). */
function matchAtom(text: string, at: number, forms: readonly string[]): number | undefined {
  for (const form of forms) {
    if (at + form.length > text.length) continue;
    let i = 0;
    while (i < form.length && fold(text.charCodeAt(at + i)) === fold(form.charCodeAt(i))) i++;
    if (i === form.length) return at + form.length;
  }
  return undefined;
}

/** Line breaks and spaces that may split a secret: raw, JSON-escaped, percent-encoded. */
const BREAK = /(?:\s|\\[nrt]|%(?:25)?(?:0a|0d|09|20))+/iy;

function skipBreaks(text: string, at: number): number {
  BREAK.lastIndex = at;
  return BREAK.test(text) ? BREAK.lastIndex : at;
}

/**
 * The forms of one character: itself, its UTF-8 bytes percent-encoded once and twice; the
 * longest first, so `"%"` written `%25` is taken whole.
 */
function atomOf(char: string): string[] {
  const bytes = new TextEncoder().encode(char);
  const once = Array.from(bytes, (byte) => `%${byte.toString(16).padStart(2, "0")}`).join("");
  return [char, once.replaceAll("%", "%25"), once].sort((a, b) => b.length - a.length);
}

/** ASCII letters folded to lower case; every other code unit as it is. */
function fold(code: number): number {
  return code >= 0x41 && code <= 0x5a ? code | 0x20 : code;
}
