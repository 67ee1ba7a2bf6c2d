/**
 * What the spam classifier (lib/learn/classifier.ts) learns and scores: a submission's tokens
 * (lib/learn/tokens.ts) and a few cues of how its message looks, which generalise from few
 * examples where single words cannot (`bench/spam_bench.ts` measured each: together about 5
 * points more spam caught at the same share of not-spam flagged after 100 presses).
 *
 * - The words of the form's other fields (a subject) count also as message words, unprefixed,
 *   so that "free" in a subject and in a message teach one another.
 * - Words written in capitals (three or more upper-case letters, as written: `~upper:FREE`).
 * - The message's share of capitals among its letters in tenths (`~caps:3`; `~caps:-` without
 *   letters), its number of links (`~links:2`, 5 and more as 5), its length as a power of two
 *   (`~len:9`), and whether it has `!!`, an amount (`$`, `€` or `£` next to a number) or HTML tags.
 *
 * Cues start with `~`, which a field's prefix never holds. Bounded like the tokens: the message
 * is read up to {@linkcode TOKEN_LIMITS}`.fieldChars`, at most {@linkcode MAX_UPPER} capital
 * words are taken.
 *
 * @module
 */
import { fieldKey, TOKEN_LIMITS, tokens, type TokenSource } from "./tokens.ts";

/** At most this many words in capitals become cues. */
export const MAX_UPPER = 50;

const UPPER_WORD = /(?<![\p{L}\p{M}\p{N}])\p{Lu}{3,24}(?![\p{L}\p{M}\p{N}])/gu;
const LINKS = /\b(?:https?:\/\/|www\.)/giu;
const AMOUNT = /[$€£]\s?\p{Nd}|\p{Nd}\s?[$€£]/u;
const TAG = /<\/?(?:a|p|br|b|i|u|font|div|span|table|td|tr|img|html|body|center)\b[^<>]{0,200}>/iu;

const LETTER = /\p{L}/u;
const CAPITAL = /\p{Lu}/u;

/** How many letters `text` has, and of them capitals (ASCII counted without a regex). */
function _letters(text: string): { letters: number; capitals: number } {
  let letters = 0;
  let capitals = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 128) {
      if (code >= 65 && code <= 90) {
        letters++;
        capitals++;
      } else if (code >= 97 && code <= 122) letters++;
    } else if (code < 0xd800 || code > 0xdfff) {
      const char = text[i]!;
      if (LETTER.test(char)) {
        letters++;
        if (CAPITAL.test(char)) capitals++;
      }
    }
  }
  return { letters, capitals };
}

/** The cues of how `message` looks (its capitals, links, length, `!!`, amounts, tags). */
export function cues(message: string): string[] {
  const text = message.slice(0, TOKEN_LIMITS.fieldChars).normalize("NFKC");
  const found: string[] = [];
  let upper = 0;
  for (const [word] of text.matchAll(UPPER_WORD)) {
    if (++upper > MAX_UPPER) break;
    found.push(`~upper:${word}`);
  }
  const { letters, capitals } = _letters(text);
  found.push(letters === 0 ? "~caps:-" : `~caps:${Math.floor((10 * capitals) / letters)}`);
  found.push(`~links:${Math.min(5, text.match(LINKS)?.length ?? 0)}`);
  found.push(`~len:${Math.min(12, Math.round(Math.log2(text.length + 1)))}`);
  if (text.includes("!!")) found.push("~!!");
  if (AMOUNT.test(text)) found.push("~amount");
  if (TAG.test(text)) found.push("~html");
  return found;
}

/**
 * What the classifier learns from and scores a submission by: its {@linkcode tokens}, its other
 * fields' words again without their field's prefix, and its message's {@linkcode cues}.
 */
export function features(source: TokenSource): string[] {
  const found = tokens(source);
  const prefixes = Object.keys(source.fields ?? {}).slice(0, TOKEN_LIMITS.fields)
    .map((name) => `${fieldKey(name)}:`);
  const shared: string[] = [];
  if (prefixes.length > 0) {
    for (const token of found) {
      const prefix = prefixes.find((p) => token.startsWith(p));
      if (prefix !== undefined && !token.includes("p:", prefix.length)) {
        shared.push(token.slice(prefix.length));
      }
    }
  }
  return found.concat(shared, cues(source.message));
}
