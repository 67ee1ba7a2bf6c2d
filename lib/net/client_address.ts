/**
 * The client's address: the TCP peer, or what a trusted proxy's header names (REAL_IP_HEADER).
 *
 * @module
 */

import {
  canonicalIp,
  type Cidr,
  cidrContains,
  formatIp,
  type IpAddress,
  parseIp,
} from "../common/ip.ts";
import type { RealIpHeader } from "../config/config.ts";
import type { LogFields } from "../log/logger.ts";

/**
 * Decides which address a request is counted and recorded under, the way nginx's realip
 * module does with `real_ip_recursive on`.
 *
 * `peer` is the TCP peer's hostname as Deno reports it. Unless the peer lies inside one of
 * `trusted`, it is the answer and no header is read. From a trusted peer:
 * - `x-forwarded-for` (the default): the header is walked from the right, skipping blank
 *   entries and entries inside `trusted` (proxies of the chain); the first entry that is not
 *   trusted is the client. An entry that is not an address stops the walk: the last trusted
 *   hop (or the peer) is the answer, never anything to the left of the garbage. When every
 *   entry is trusted, the leftmost is the answer. `X-Real-IP` is not read.
 * - `x-real-ip`: the header's address, or the peer when it is absent or not an address
 *   (repeated headers arrive joined as "a, b" and count as garbage). `X-Forwarded-For` is not
 *   read.
 *
 * The result is canonical (see {@linkcode formatIp}; IPv4-mapped IPv6 becomes IPv4). It is
 * never empty and this function never throws.
 */
export function clientAddress(
  peer: string,
  headers: Headers,
  trusted: readonly Cidr[],
  header: RealIpHeader = "x-forwarded-for",
): string {
  // Behind a proxy, every request comes from the same peer: its answer is remembered.
  if (peer !== lastPeer || trusted !== lastTrusted) {
    const peerIp = parseIp(peer);
    if (peerIp === null) {
      const text = typeof peer === "string" ? peer.trim() : "";
      return text === "" ? "unknown" : text;
    }
    [lastPeer, lastTrusted] = [peer, trusted];
    lastPeerTrusted = isTrusted(peerIp, trusted);
    lastPeerText = formatIp(peerIp);
  }
  if (!lastPeerTrusted) return lastPeerText;
  if (header === "x-real-ip") {
    const realIp = headers.get("x-real-ip");
    return (realIp === null ? null : canonicalIp(realIp)) ?? lastPeerText;
  }
  const forwardedFor = headers.get("x-forwarded-for");
  return forwardedFor === null ? lastPeerText : walkForwardedFor(forwardedFor, trusted);
}

// The last peer seen and whether it is trusted; the answer depends only on (peer, trusted).
let lastPeer = "";
let lastTrusted: readonly Cidr[] | undefined;
let lastPeerTrusted = false;
let lastPeerText = "0.0.0.0";

function isTrusted(ip: IpAddress, trusted: readonly Cidr[]): boolean {
  for (const cidr of trusted) if (cidrContains(cidr, ip)) return true;
  return false;
}

/**
 * The client named by `value` (an `X-Forwarded-For` from a trusted peer), scanned from the
 * right so a long client-written prefix costs nothing; `lastPeerText` when no entry counts.
 */
function walkForwardedFor(value: string, trusted: readonly Cidr[]): string {
  let hop = lastPeerText; // the last trusted hop: the peer until an entry is trusted
  let end = value.length;
  while (end > 0) {
    const comma = value.lastIndexOf(",", end - 1);
    const entry = value.slice(comma + 1, end);
    end = comma < 0 ? 0 : comma;
    if (entry.trim() === "") continue;
    const ip = parseIp(entry);
    if (ip === null) return hop; // garbage: nothing to its left is believed
    hop = formatIp(ip);
    if (!isTrusted(ip, trusted)) return hop;
  }
  return hop; // every entry trusted: the leftmost
}

/** How often, at most, {@linkcode ProxyNotice} says that requests carry the proxy's own address. */
export const PROXY_NOTICE_INTERVAL_MS = 3_600_000;

/**
 * Whether `ip`, a request's client address as {@linkcode clientAddress} decided it, is inside
 * `trusted`: the proxy's own address, because the trusted proxy named no client (no header, or
 * one contactd cannot read, or only trusted hops). Every sender behind it then counts as one.
 */
export function isProxyAddress(ip: string, trusted: readonly Cidr[]): boolean {
  const parsed = parseIp(ip);
  return parsed !== null && isTrusted(parsed, trusted);
}

/**
 * Makes a misconfigured proxy visible: the first request recorded under a trusted proxy's own
 * address ({@linkcode isProxyAddress}) is said at once, then at most once per
 * {@linkcode PROXY_NOTICE_INTERVAL_MS} with how many there were (event
 * `client_address_is_proxy`, never the address). A small state machine; time is a parameter.
 */
export class ProxyNotice {
  #count = 0;
  #saidAt = -Infinity;

  /**
   * Notes one request whose client address is `ip` at `now` (ms); returns the log line's fields
   * when it is time to say so, else `undefined`.
   */
  note(
    ip: string,
    trusted: readonly Cidr[],
    header: RealIpHeader,
    now: number,
  ): LogFields | undefined {
    if (!isProxyAddress(ip, trusted)) return undefined;
    this.#count++;
    if (now - this.#saidAt < PROXY_NOTICE_INTERVAL_MS) return undefined;
    const count = this.#count;
    this.#count = 0;
    this.#saidAt = now;
    return {
      event: "client_address_is_proxy",
      requests: count,
      header,
      hint:
        `requests from a trusted proxy (TRUSTED_PROXIES) carry no client address contactd can read in ${header}: every sender counts as the proxy (one rate limit for all; Spam blocks contacts only). Make the proxy set ${header} to the client's address (nginx: proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for), or set REAL_IP_HEADER to the header it sets`,
    };
  }
}
