/**
 * Choosing the address a request is attributed to, honouring forwarding
 * headers only when they were set by a proxy we trust.
 *
 * @module
 */

import { canonicalIp, type Cidr, cidrContains, formatIp, type IpAddress, parseIp } from "./ip.ts";

/**
 * Decides which address a request is counted and recorded under.
 *
 * `peer` is the TCP peer's hostname as Deno reports it. Only when the peer
 * lies inside one of `trusted` is a forwarded address considered: `X-Real-IP`
 * if present, otherwise the rightmost non-empty `X-Forwarded-For` entry (the
 * one our proxy appended; entries further left are client-controlled). A
 * candidate that is not a valid address falls back to the peer, so a broken
 * or hostile header can never yield an empty or arbitrary key.
 *
 * The result is canonical (see {@linkcode formatIp}; IPv4-mapped IPv6
 * becomes IPv4). It is never empty and this function never throws.
 */
export function clientAddress(peer: string, headers: Headers, trusted: readonly Cidr[]): string {
  let peerIp: IpAddress | null;
  if (peer === lastPeer && trusted === lastTrusted) {
    peerIp = lastPeerIp; // behind a proxy, every request comes from the same peer
  } else {
    peerIp = parseIp(peer);
    if (peerIp === null) {
      const text = typeof peer === "string" ? peer.trim() : "";
      return text === "" ? "unknown" : text;
    }
    [lastPeer, lastTrusted, lastPeerIp] = [peer, trusted, peerIp];
    lastPeerTrusted = trusted.some((cidr) => cidrContains(cidr, peerIp!));
  }
  if (!lastPeerTrusted) return formatIp(peerIp);
  const candidate = forwardedCandidate(headers);
  return (candidate === null ? null : canonicalIp(candidate)) ?? formatIp(peerIp);
}

// The last peer seen and whether it is trusted; the answer depends only on (peer, trusted).
let lastPeer = "";
let lastTrusted: readonly Cidr[] | undefined;
let lastPeerIp: IpAddress = { version: 4, bytes: new Uint8Array(4) };
let lastPeerTrusted = false;

/** The address a trusted proxy claims for the client, unparsed, if any. */
function forwardedCandidate(headers: Headers): string | null {
  // Repeated X-Real-IP headers arrive joined as "a, b" and then fail to parse,
  // which is intended: a proxy sends exactly one.
  const realIp = headers.get("x-real-ip");
  if (realIp !== null) return realIp;
  const forwardedFor = headers.get("x-forwarded-for");
  if (forwardedFor === null) return null;
  // Scan from the right so a long client-supplied prefix costs nothing.
  let end = forwardedFor.length;
  while (end > 0) {
    const comma = forwardedFor.lastIndexOf(",", end - 1);
    const entry = forwardedFor.slice(comma + 1, end).trim();
    if (entry !== "") return entry;
    end = comma < 0 ? 0 : comma;
  }
  return null;
}
