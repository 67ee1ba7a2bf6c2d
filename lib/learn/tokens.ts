/**
 * The features of a submission its sender controls, as tokens for the spam classifier
 * (lib/learn/classifier.ts): the message's words, the name's, the contact's domain (and its
 * top-level domain), the other fields' words and the links' hosts and paths, each field's
 * tokens prefixed with its name.
 *
 * Unicode-aware: text is NFKC-normalised and lower-cased, then split into words; a run of a
 * script written without spaces (Chinese, Japanese, Thai…) is split by `Intl.Segmenter`.
 * Numbers, links and email addresses become shape tokens (`#4` for a four-digit number; `url:`
 * with a link's host and its last two labels, `tld:` and `path:` with the words of its path;
 * `email:` with an address's domain, never its local part) so that each new one is not a new,
 * unknown word. Bounded for hostile input: each field is read up to
 * {@linkcode TOKEN_LIMITS}`.fieldChars`, a submission gives at most `.tokens` tokens, and a long
 * word is reduced to its shape.
 *
 * @module
 */

/** What the tokens are drawn from: a validated submission (lib/form/submission.ts) fits. */
export interface TokenSource {
  /** The message; may be empty. */
  readonly message: string;
  /** The sender's name; may be empty. */
  readonly name?: string | undefined;
  /** How to reach the sender: only an email address's domain is kept, else its shape. */
  readonly contact?: string | undefined;
  /** The form's other fields (and, in the benchmark, a mail's subject). */
  readonly fields?: Readonly<Record<string, string>> | undefined;
}

/** The bounds that keep tokenising hostile input cheap. */
export const TOKEN_LIMITS = {
  /** At most this many tokens per submission (repeats included). */
  tokens: 1000,
  /** Of each field, only this many UTF-16 code units are read. */
  fieldChars: 8192,
  /** A word longer than this (in UTF-16 code units) becomes a shape token, `long:<n>`. */
  wordChars: 24,
  /** At most this many words of a link's path are tokens. */
  pathWords: 8,
  /** At most this many other fields are read. */
  fields: 20,
} as const;

const LINK = /\b(?:https?:\/\/|www\.)([^\s/?#<>"'()\[\]{}]{1,253})[^\s<>"']*/giu;
/** What ends an email address in running text. */
const ADDRESS_END = /[\s@<>"'(),;:]/u;
const HAS_DIGIT = /\p{Nd}/u;
const segmenter = new Intl.Segmenter("und", { granularity: "word" });

/** Text as compared: NFKC (full-width and compatibility forms folded) and lower case. */
export function fold(text: string): string {
  return text.normalize("NFKC").toLowerCase();
}

/** A host reduced to what identifies it: lower case, no port, no `www.`, no trailing dot. */
export function hostOf(raw: string): string {
  const host = fold(raw).replace(/\.*(?::\d*)?\.*$/, "").replace(/^www\./, "");
  return host.length > 64 ? host.slice(-64) : host;
}

/** The shape of a word of digits and separators: `#` and its digit count (8 and over: `#8+`). */
function _numberShape(word: string): string {
  const digits = word.replace(/\D/gu, "").length;
  return digits >= 8 ? "#8+" : `#${digits}`;
}

/** Collects tokens up to the cap; `full` tells the caller to stop reading. */
class _Bag {
  readonly tokens: string[] = [];
  get full(): boolean {
    return this.tokens.length >= TOKEN_LIMITS.tokens;
  }
  add(token: string): void {
    if (!this.full) this.tokens.push(token);
  }
}

/** The scripts written without spaces between words: their runs go through `Intl.Segmenter`. */
const UNSPACED =
  "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Lao}" +
  "\\p{Script=Khmer}\\p{Script=Myanmar}\\p{Script=Tibetan}";
/**
 * One piece of text: a run of a script written without spaces (group 1), a run of other
 * letters, marks and digits (group 2: a word), or one symbol.
 */
const RUN = new RegExp(
  `([${UNSPACED}]+)|([[\\p{L}\\p{M}\\p{N}_'’]--[${UNSPACED}]]+)|[^\\s\\p{L}\\p{M}\\p{N}_'’]`,
  "gv",
);
const NUMBER = /^[\p{Nd}_'’]+$/u;
const QUOTES = /^['’_]+|['’_]+$/gu;

/** One word-like piece: a number's shape, a long word's shape, or the word. */
function _word(bag: _Bag, word: string, prefix: string): void {
  if (NUMBER.test(word) && HAS_DIGIT.test(word)) bag.add(prefix + _numberShape(word));
  else if (word.length > TOKEN_LIMITS.wordChars) {
    bag.add(`${prefix}long:${Math.min(9, Math.floor(word.length / 10))}`);
  } else bag.add(prefix + word);
}

const _isQuote = (code: number) => code === 0x27 || code === 0x2019 || code === 0x5f;

/**
 * The words of `text` (already folded, links and addresses taken out), `prefix` before each.
 * Runs of letters are words where spaces separate words; a run of a script written without
 * spaces is segmented by `Intl.Segmenter`. Digits joined by `,` `.` `-` `/` `:` are one number.
 */
function _words(bag: _Bag, text: string, prefix: string): void {
  const numbers = text.replace(/\p{Nd}(?:[.,:\/\-]?\p{Nd})*/gu, (n) => n.replace(/\D/gu, ""));
  for (const match of numbers.matchAll(RUN)) {
    if (bag.full) return;
    if (match[1] !== undefined) {
      for (const segment of segmenter.segment(match[1])) {
        if (bag.full) return;
        if (segment.isWordLike) _word(bag, segment.segment, prefix);
      }
    } else if (match[2] !== undefined) {
      let word = match[2];
      if (_isQuote(word.charCodeAt(0)) || _isQuote(word.charCodeAt(word.length - 1))) {
        word = word.replace(QUOTES, "");
      }
      if (word !== "") _word(bag, word, prefix);
    } else {
      // Punctuation and symbols ($, €, !, emoji) are cues of their own.
      bag.add(prefix + "p:" + match[0]);
    }
  }
}

/**
 * Email addresses of `text` become `email:<domain>` tokens (their local part is dropped); the
 * text without them is returned. Linear: each `@` looks around it once.
 */
function _addresses(bag: _Bag, text: string, prefix: string): string {
  let out = "";
  let from = 0;
  for (let at = text.indexOf("@"); at >= 0; at = text.indexOf("@", at + 1)) {
    let start = at;
    while (start > from && at - start < 64 && !ADDRESS_END.test(text[start - 1]!)) start--;
    let end = at + 1;
    while (end < text.length && end - at < 254 && !ADDRESS_END.test(text[end]!)) end++;
    if (start === at || end === at + 1) continue;
    bag.add(`${prefix}email:${hostOf(text.slice(at + 1, end))}`);
    out += text.slice(from, start) + " ";
    from = end;
    at = end - 1;
  }
  return out + text.slice(from);
}

/**
 * A link's tokens: its host, the host's last two labels and its top-level domain, and the words
 * of its path (at most {@linkcode TOKEN_LIMITS}`.pathWords`).
 */
function _link(bag: _Bag, link: string, rawHost: string, prefix: string): void {
  const host = hostOf(rawHost);
  bag.add(`${prefix}url:${host}`);
  const labels = host.split(".");
  if (labels.length > 2) bag.add(`${prefix}url:${labels.slice(-2).join(".")}`);
  if (labels.length > 1) bag.add(`${prefix}tld:${labels.at(-1)}`);
  const path = link.slice(link.indexOf(rawHost) + rawHost.length);
  let words = 0;
  for (const word of path.split(/[^\p{L}\p{N}]+/u)) {
    if (word.length < 2 || word.length > TOKEN_LIMITS.wordChars) continue;
    if (++words > TOKEN_LIMITS.pathWords) break;
    bag.add(`${prefix}path:${/^\p{Nd}+$/u.test(word) ? _numberShape(word) : word}`);
  }
}

/** The tokens of one field: links' hosts and addresses' domains as shapes, then the words. */
function _field(bag: _Bag, raw: string, prefix: string): void {
  let text = fold(raw.slice(0, TOKEN_LIMITS.fieldChars));
  text = text.replace(LINK, (link: string, host: string) => {
    _link(bag, link, host, prefix);
    return " ";
  });
  if (text.includes("@")) text = _addresses(bag, text, prefix);
  _words(bag, text, prefix);
}

/** The contact's tokens: an email address's domain only, else the contact's shape. */
function _contact(bag: _Bag, contact: string): void {
  const trimmed = contact.trim().slice(0, TOKEN_LIMITS.fieldChars);
  if (trimmed === "") return bag.add("contact:none");
  const at = trimmed.lastIndexOf("@");
  if (at > 0 && at < trimmed.length - 1 && !/\s/u.test(trimmed)) {
    const host = hostOf(trimmed.slice(at + 1));
    bag.add(`contact:${host}`);
    return bag.add(`contact:.${host.slice(host.lastIndexOf(".") + 1)}`);
  }
  if (/^[+\d\s().\-\/]+$/u.test(trimmed)) return bag.add("contact:phone");
  if (/^(?:https?:\/\/|www\.)/iu.test(trimmed)) return _field(bag, trimmed, "contact:");
  bag.add("contact:other");
}

/** The prefix of a form field's tokens: its name folded, letters, digits and `_` only, ≤ 24. */
export function fieldKey(name: string): string {
  return fold(name).replace(/[^\p{L}\p{N}_]/gu, "").slice(0, 24);
}

/**
 * The tokens of a submission, in order, repeats included, at most
 * {@linkcode TOKEN_LIMITS}`.tokens`: message words unprefixed; `name:`, `contact:` and
 * `<field>:` before the others' (a mail's subject is the field `subject`).
 */
export function tokens(source: TokenSource): string[] {
  const bag = new _Bag();
  _field(bag, source.message, "");
  if (source.name !== undefined && source.name.trim() !== "") _field(bag, source.name, "name:");
  if (source.contact !== undefined) _contact(bag, source.contact);
  const fields = Object.entries(source.fields ?? {}).slice(0, TOKEN_LIMITS.fields);
  for (const [name, value] of fields) _field(bag, value, `${fieldKey(name)}:`);
  return bag.tokens;
}
