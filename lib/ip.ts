/**
 * Strict IP address and CIDR parsing, canonical formatting and prefix matching.
 *
 * Parsing is total: garbage yields `null`, never an exception. Only the plain
 * textual forms are accepted (no zone ids, ports, or inet_aton shortcuts like
 * "127.1" or "0x7f.0.0.1"), because addresses read from headers are untrusted.
 *
 * @module
 */

/** A parsed IP address; IPv4-mapped IPv6 (::ffff:a.b.c.d) is returned as IPv4. */
export interface IpAddress {
  /** Address family. */
  readonly version: 4 | 6;
  /** Network-order bytes: 4 for IPv4, 16 for IPv6. */
  readonly bytes: Uint8Array;
}

/** A network prefix such as 10.0.0.0/8; host bits of `bytes` are always zero. */
export interface Cidr {
  /** Address family. */
  readonly version: 4 | 6;
  /** Network-order bytes of the network address: 4 for IPv4, 16 for IPv6. */
  readonly bytes: Uint8Array;
  /** Prefix length in bits: 0-32 for IPv4, 0-128 for IPv6. */
  readonly prefix: number;
}

// The longest valid form, "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]", is 47
// characters; the cap lets hostile megabyte inputs be refused before any scanning.
const MAX_IP_TEXT = 64;
const MAX_CIDR_TEXT = MAX_IP_TEXT + 4;

/**
 * Parses an IPv4 dotted quad or an IPv6 address (optionally in brackets).
 * Surrounding whitespace is ignored. Returns `null` for anything else,
 * including zone ids ("fe80::1%eth0"), ports and inputs over 64 characters.
 */
export function parseIp(text: string): IpAddress | null {
  if (typeof text !== "string" || text.length > MAX_IP_TEXT) return null;
  const raw = parseRaw(text.trim());
  return raw === null ? null : unmap(raw);
}

const CANONICAL_V4 =
  /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * True when `text` is an IPv4 address exactly as {@linkcode formatIp} writes it (no spaces,
 * no leading zeros): a hot-path shortcut, since such text parses and formats to itself.
 */
export function isCanonicalIpv4(text: string): boolean {
  return text.length <= 15 && CANONICAL_V4.test(text);
}

/**
 * Formats an address canonically: IPv4 as a dotted quad, IPv6 per RFC 5952
 * (lowercase, no leading zeros, the longest run of two or more zero groups
 * compressed to "::"). Throws `RangeError` if `bytes` has the wrong length.
 */
export function formatIp(ip: IpAddress): string {
  const b = ip.bytes;
  if (b.length !== (ip.version === 4 ? 4 : 16)) {
    throw new RangeError(`IPv${ip.version} address must have ${ip.version === 4 ? 4 : 16} bytes`);
  }
  if (ip.version === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  // RFC 5952 section 5: mapped addresses keep their dotted tail.
  if (isMapped(b)) return `::ffff:${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  const group = (i: number) => (b[2 * i]! << 8) | b[2 * i + 1]!;
  let bestStart = -1;
  let bestLength = 1; // a lone zero group is never compressed
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && group(j) === 0) j++;
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
    if (text !== "" && !text.endsWith(":")) text += ":";
    text += group(i).toString(16);
  }
  return text;
}

/**
 * Parses "address/prefix" or a bare address (a /32 or /128 host route).
 * An IPv4-mapped IPv6 network with a prefix of 96 or more becomes the
 * equivalent IPv4 network ("::ffff:127.0.0.0/104" is 127.0.0.0/8).
 * Host bits are cleared. Returns `null` for anything malformed.
 */
export function parseCidr(text: string): Cidr | null {
  if (typeof text !== "string" || text.length > MAX_CIDR_TEXT) return null;
  const trimmed = text.trim();
  const slash = trimmed.indexOf("/");
  const raw = parseRaw(slash < 0 ? trimmed : trimmed.slice(0, slash));
  if (raw === null) return null;
  const bits = raw.version === 4 ? 32 : 128;
  let prefix = bits;
  if (slash >= 0) {
    const parsed = parseDecimal(trimmed.slice(slash + 1), bits);
    if (parsed === null) return null;
    prefix = parsed;
  }
  if (raw.version === 6 && isMapped(raw.bytes) && prefix >= 96) {
    return { version: 4, bytes: mask(raw.bytes.slice(12), prefix - 96), prefix: prefix - 96 };
  }
  return { version: raw.version, bytes: mask(raw.bytes, prefix), prefix };
}

/**
 * Reports whether `ip` lies inside `cidr`. Both are compared as IPv6, with
 * IPv4 seen as ::ffff:a.b.c.d, so an IPv6 network covering the mapped range
 * (such as ::/0) also contains IPv4 addresses, the same addresses it contains
 * when spelled in mapped form.
 */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  const bits = cidr.version === 4 ? 32 : 128;
  if (!Number.isInteger(cidr.prefix) || cidr.prefix < 0 || cidr.prefix > bits) return false;
  const prefix = cidr.prefix + 128 - bits;
  const net = widen(cidr);
  const addr = widen(ip);
  if (net === null || addr === null) return false;
  const whole = prefix >>> 3;
  for (let i = 0; i < whole; i++) if (net[i] !== addr[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const bitMask = (0xff << (8 - rest)) & 0xff;
  return ((net[whole]! ^ addr[whole]!) & bitMask) === 0;
}

/** Parses without trimming or unmapping; brackets are allowed around IPv6 only. */
function parseRaw(text: string): IpAddress | null {
  const bracketed = text.startsWith("[") && text.endsWith("]");
  if (bracketed || text.includes(":")) {
    const bytes = parseV6(bracketed ? text.slice(1, -1) : text);
    return bytes === null ? null : { version: 6, bytes };
  }
  const bytes = parseV4(text);
  return bytes === null ? null : { version: 4, bytes };
}

function parseV4(text: string): Uint8Array | null {
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

/** ASCII digits only, at most three, no leading zero: "010" could mean octal. */
function parseDecimal(text: string, max: number): number | null {
  if (text.length === 0 || text.length > 3 || (text.length > 1 && text[0] === "0")) return null;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return null;
    n = n * 10 + digit;
  }
  return n <= max ? n : null;
}

// The parser and formatter below run twice per POST (client address, rate-limit key): they
// scan characters and allocate only the result, no arrays of parts or groups.

function parseV6(text: string): Uint8Array | null {
  // Only the first "::" is special: any other (or ":::") leaves an empty group,
  // which parseGroups refuses, as a second zero run would be ambiguous.
  const gap = text.indexOf("::");
  const head: number[] = [];
  const tail: number[] = [];
  if (gap < 0) {
    if (!parseGroups(text, 0, text.length, true, head) || head.length !== 8) return null;
  } else if (
    !parseGroups(text, 0, gap, false, head) ||
    !parseGroups(text, gap + 2, text.length, true, tail) ||
    head.length + tail.length > 7
  ) {
    return null;
  }
  const bytes = new Uint8Array(16);
  for (let i = 0; i < head.length; i++) {
    bytes[2 * i] = head[i]! >>> 8;
    bytes[2 * i + 1] = head[i]! & 0xff;
  }
  for (let i = 0, at = 16 - 2 * tail.length; i < tail.length; i++, at += 2) {
    bytes[at] = tail[i]! >>> 8;
    bytes[at + 1] = tail[i]! & 0xff;
  }
  return bytes;
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

/** True for ::ffff:0:0/96, the IPv4-mapped range. */
function isMapped(bytes: Uint8Array): boolean {
  if (bytes.length !== 16 || bytes[10] !== 0xff || bytes[11] !== 0xff) return false;
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return true;
}

function unmap(ip: IpAddress): IpAddress {
  return ip.version === 6 && isMapped(ip.bytes) ? { version: 4, bytes: ip.bytes.slice(12) } : ip;
}

/** IPv4 as ::ffff:a.b.c.d so that both families share one comparison. */
function widen(ip: { readonly version: 4 | 6; readonly bytes: Uint8Array }): Uint8Array | null {
  if (ip.version === 6) return ip.bytes.length === 16 ? ip.bytes : null;
  if (ip.bytes.length !== 4) return null;
  const wide = new Uint8Array(16);
  wide[10] = wide[11] = 0xff;
  wide.set(ip.bytes, 12);
  return wide;
}

function mask(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = bytes.slice();
  for (let i = 0; i < out.length; i++) {
    const keep = Math.min(8, Math.max(0, prefix - 8 * i)); // network bits in this byte
    out[i] = out[i]! & (0xff << (8 - keep));
  }
  return out;
}
