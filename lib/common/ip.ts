/**
 * Strict IP address and CIDR parsing, canonical formatting and prefix matching.
 *
 * Parsing is total: garbage yields `null`, never an exception. Only the plain
 * textual forms are accepted (no zone ids, ports, or inet_aton shortcuts like
 * "127.1" or "0x7f.0.0.1"), because addresses read from headers are untrusted.
 *
 * @module
 */
import { formatV6Groups, parseDecimal, parseV4, parseV6Groups } from "./_ip_text.ts";

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

/**
 * True when `text` is an IPv4 address exactly as {@linkcode formatIp} writes it (no spaces,
 * no leading zeros): a hot-path shortcut, since such text parses and formats to itself.
 * Scanned by hand: it runs twice per POST, and a regular expression costs several times more.
 */
export function isCanonicalIpv4(text: string): boolean {
  const length = text.length;
  if (length < 7 || length > 15) return false;
  let octets = 0;
  let i = 0;
  while (true) {
    const start = i;
    let value = 0;
    for (; i < length && i - start < 4; i++) {
      const digit = text.charCodeAt(i) - 48;
      if (digit < 0 || digit > 9) break;
      value = value * 10 + digit;
    }
    const digits = i - start;
    if (digits === 0 || digits > 3 || value > 255) return false;
    if (digits > 1 && text.charCodeAt(start) === 48) return false; // leading zero
    if (++octets === 4) return i === length;
    if (i >= length || text.charCodeAt(i) !== 46) return false; // "."
    i++;
  }
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
  const groups = GROUPS;
  for (let i = 0; i < 8; i++) groups[i] = (b[2 * i]! << 8) | b[2 * i + 1]!;
  return formatV6Groups(groups);
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

function parseV6(text: string): Uint8Array | null {
  const groups = GROUPS;
  if (!parseV6Groups(text, groups)) return null;
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    bytes[2 * i] = groups[i]! >>> 8;
    bytes[2 * i + 1] = groups[i]! & 0xff;
  }
  return bytes;
}

// Scratch groups for the parsers here (single-threaded, never held across calls).
const GROUPS: number[] = [0, 0, 0, 0, 0, 0, 0, 0];

/**
 * `formatIp(parseIp(text))`, or `null` where `parseIp` gives `null`, without building the
 * address's bytes: the client address of every POST goes through here.
 */
export function canonicalIp(text: string): string | null {
  if (typeof text !== "string" || text.length > MAX_IP_TEXT) return null;
  if (isCanonicalIpv4(text)) return text; // the common case: it parses to itself
  const trimmed = text.trim();
  const bracketed = trimmed.startsWith("[") && trimmed.endsWith("]");
  if (!bracketed && !trimmed.includes(":")) {
    const b = parseV4(trimmed);
    return b === null ? null : `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  }
  const g = GROUPS;
  if (!parseV6Groups(bracketed ? trimmed.slice(1, -1) : trimmed, g)) return null;
  if (isMappedGroups(g)) return `${g[6]! >>> 8}.${g[6]! & 0xff}.${g[7]! >>> 8}.${g[7]! & 0xff}`;
  return formatV6Groups(g);
}

/**
 * The canonical text of the /64 network of the IPv6 address `text` (host bits cleared, no
 * "/64"), or `null` unless `parseIp(text)` is IPv6 (IPv4-mapped addresses are IPv4).
 */
export function ipv6Network64(text: string): string | null {
  if (typeof text !== "string" || text.length > MAX_IP_TEXT) return null;
  const trimmed = text.trim();
  const bracketed = trimmed.startsWith("[") && trimmed.endsWith("]");
  if (!bracketed && !trimmed.includes(":")) return null;
  const g = GROUPS;
  if (!parseV6Groups(bracketed ? trimmed.slice(1, -1) : trimmed, g) || isMappedGroups(g)) {
    return null;
  }
  g[4] =
    g[5] =
    g[6] =
    g[7] =
      0;
  return formatV6Groups(g);
}

function isMappedGroups(g: readonly number[]): boolean {
  return g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff;
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
