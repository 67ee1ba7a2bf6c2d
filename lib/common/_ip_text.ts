/**
 * The textual forms of addresses. A client address is parsed and formatted on every POST, so
 * IPv6 is scanned character by character into a reused group array; dotted quads are split
 * (an address that is already canonical IPv4 never gets here: lib/common/ip.ts recognises it first).
 *
 * @module
 */

/** The four bytes of a dotted quad, or `null`; see {@linkcode parseDecimal} for each part. */
export function parseV4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const n = parseDecimal(parts[i]!, 255);
    if (n === null) return null;
    bytes[i] = n;
  }
  return bytes;
}

/** ASCII digits only, at most three, no leading zero ("010" could mean octal); at most `max`. */
export function parseDecimal(text: string, max: number): number | null {
  if (text.length === 0 || text.length > 3 || (text.length > 1 && text[0] === "0")) return null;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return null;
    n = n * 10 + digit;
  }
  return n <= max ? n : null;
}

// Group lists of the two sides of "::", reused: nothing here is held across calls.
const HEAD: number[] = [];
const TAIL: number[] = [];

/**
 * Parses IPv6 text (no brackets, no zone) into the 8 16-bit groups of `out`; false (and
 * `out` unspecified) when malformed.
 */
export function parseV6Groups(text: string, out: number[]): boolean {
  // Only the first "::" is special: any other (or ":::") leaves an empty group,
  // which parseGroups refuses, as a second zero run would be ambiguous.
  const gap = text.indexOf("::");
  const head = HEAD;
  const tail = TAIL;
  head.length = tail.length = 0;
  if (gap < 0) {
    if (!parseGroups(text, 0, text.length, true, head) || head.length !== 8) return false;
  } else if (
    !parseGroups(text, 0, gap, false, head) ||
    !parseGroups(text, gap + 2, text.length, true, tail) ||
    head.length + tail.length > 7
  ) {
    return false;
  }
  for (let i = 0; i < 8; i++) out[i] = 0;
  for (let i = 0; i < head.length; i++) out[i] = head[i]!;
  for (let i = 0; i < tail.length; i++) out[8 - tail.length + i] = tail[i]!;
  return true;
}

/**
 * Appends the ":"-separated groups of `text[start, end)` to `out` (none if empty): 1-4 hex
 * digits each; only the very last may be an embedded IPv4. False if any part is malformed.
 */
function parseGroups(
  text: string,
  start: number,
  end: number,
  mayEndWithV4: boolean,
  out: number[],
): boolean {
  if (start === end) return true;
  for (let i = start;;) {
    let j = text.indexOf(":", i);
    if (j < 0 || j > end) j = end;
    if (j === end && mayEndWithV4 && text.slice(i, end).includes(".")) {
      const v4 = parseV4(text.slice(i, end));
      if (v4 === null) return false;
      out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      return true;
    }
    if (j === i || j - i > 4) return false;
    let n = 0;
    for (let k = i; k < j; k++) {
      const digit = hexDigit(text.charCodeAt(k));
      if (digit < 0) return false;
      n = (n << 4) | digit;
    }
    out.push(n);
    if (j === end) return true;
    i = j + 1;
  }
}

function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48; // 0-9
  const lower = code | 0x20;
  if (lower >= 97 && lower <= 102) return lower - 87; // a-f, A-F
  return -1;
}

const HEX = "0123456789abcdef";

/**
 * RFC 5952 text of 8 groups: lowercase, no leading zeros, the longest run of two or more zero
 * groups (the first of equals) compressed to "::".
 */
export function formatV6Groups(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1; // a lone zero group is never compressed
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  let text = "";
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      text += "::";
      i += bestLength - 1;
      continue;
    }
    if (i > 0 && i !== bestStart + bestLength) text += ":";
    text += hex(groups[i]!);
  }
  return text;
}

/** Lowercase hex without leading zeros (`toString(16)` is a runtime call). */
function hex(n: number): string {
  if (n < 0x10) return HEX[n]!;
  if (n < 0x100) return HEX[n >>> 4]! + HEX[n & 15]!;
  if (n < 0x1000) return HEX[n >>> 8]! + HEX[(n >>> 4) & 15]! + HEX[n & 15]!;
  return HEX[n >>> 12]! + HEX[(n >>> 8) & 15]! + HEX[(n >>> 4) & 15]! + HEX[n & 15]!;
}
