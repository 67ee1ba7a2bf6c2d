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
