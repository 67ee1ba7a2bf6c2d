/**
 * A sliding-window-log rate limiter whose memory stays bounded when callers
 * rotate through huge numbers of keys (for example IPv6 addresses).
 *
 * @module
 */

import { canonicalIp, ipv6Network64, isCanonicalIpv4 } from "../common/ip.ts";

/** Configuration for {@linkcode RateLimiter}. */
export interface RateLimiterOptions {
  /** Admitted attempts allowed per key in any window; a positive integer. */
  readonly limit: number;
  /** Window length in milliseconds; positive, at most 2³⁰ (about 12 days). */
  readonly windowMs: number;
  /** Most keys held at once; the least recently used is dropped beyond it. Default 1,000,000. */
  readonly maxEntries?: number;
}

/** Outcome of {@linkcode RateLimiter.take}. */
export type RateDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterSeconds: number };

const DEFAULT_MAX_ENTRIES = 1_000_000;
const MAX_ENTRIES = 2 ** 30; // slot numbers live in Uint32Arrays, 0 meaning "none"
// Times are stored as whole milliseconds after a movable epoch in a Uint32Array.
// The epoch is moved so that "now" stays within DRIFT of CENTRE; offset 0 (EMPTY)
// is then always at least DRIFT >= windowMs in the past, i.e. expired.
const CENTRE = 2 ** 31;
const DRIFT = 2 ** 30;
const EMPTY = 0;
const MAX_OFFSET = 2 ** 32 - 1;
// Idle keys dropped per take() at most; a take adds at most one key, so a
// flood drains much faster than it fills, yet no single call does much work.
const SWEEP_BATCH = 16;
// Below this many slots, rebuilding the tables to return memory is not worth it.
const COMPACT_MIN_SLOTS = 4096;
const ALLOWED: RateDecision = Object.freeze({ allowed: true });

/**
 * Admits at most `limit` attempts per key in any `windowMs` window; an attempt
 * at t stops counting at exactly t + windowMs (times are whole milliseconds;
 * fractions are dropped). The clock is a parameter.
 *
 * Memory: keys are kept as 64-bit fingerprints under a per-instance random
 * seed, not as strings, in flat typed arrays: 20 + 4 * limit bytes per key
 * plus a 4-byte hash bucket. Room for `maxEntries` keys is reserved as virtual
 * memory up front and touched only as keys arrive; once most keys have expired
 * the tables are rebuilt so the memory is returned. Two keys share a budget
 * only if their fingerprints collide (odds about n²/2⁶⁵ for n keys).
 */
export class RateLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #capacity: number;
  readonly #seeds = crypto.getRandomValues(new Uint32Array(2));
  #epoch = NaN; // set by the first take()
  #lastAdmit = -Infinity; // newest admitted attempt, absolute ms
  // Per slot, 1-based (slot 0 is the "none" sentinel):
  #fp1 = new Uint32Array(0); // fingerprint, low half; also picks the bucket
  #fp2 = new Uint32Array(0); // fingerprint, high half
  #chain = new Uint32Array(0); // next slot in the same bucket
  #prev = new Uint32Array(0); // recency list, towards least recently used
  #next = new Uint32Array(0); // recency list, towards most recent; free list link
  #times = new Uint32Array(0); // `limit` attempt offsets per slot, oldest first, EMPTY padded
  #buckets = new Uint32Array(0);
  #head = 0; // least recently used
  #tail = 0; // most recently used
  #size = 0;
  #used = 0; // slots handed out since the tables were last built
  #free = 0;

  /** Creates a limiter; throws `RangeError` for invalid options or if memory cannot be reserved. */
  constructor(options: RateLimiterOptions) {
    const { limit, windowMs, maxEntries = DEFAULT_MAX_ENTRIES } = options;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be >= 1");
    if (!(windowMs > 0 && windowMs <= DRIFT)) {
      throw new RangeError(`windowMs must be in (0, ${DRIFT}]`);
    }
    if (!Number.isInteger(maxEntries) || maxEntries < 1 || maxEntries > MAX_ENTRIES) {
      throw new RangeError(`maxEntries must be between 1 and ${MAX_ENTRIES}`);
    }
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#capacity = maxEntries;
    this.#build();
  }

  /** Number of keys currently held. */
  get size(): number {
    return this.#size;
  }

  /**
   * Counts one attempt for key at nowMs if a slot is free. Refused attempts are
   * not counted. Throws `RangeError` unless `nowMs` is a finite timestamp.
   *
   * If the clock has gone back before a key's newest attempt, the key's history
   * is discarded and it starts fresh: timestamps from the "future" cannot be
   * interpreted, and honouring them could lock the key out for as long as the
   * clock was wrong. A monotonic clock avoids the question.
   */
  take(key: string, nowMs: number): RateDecision {
    if (!(Math.abs(nowMs) <= Number.MAX_SAFE_INTEGER)) {
      throw new RangeError("nowMs must be a finite timestamp");
    }
    const now = this.#offset(Math.floor(nowMs));
    this.#sweep(now);
    const h1 = fingerprint(key, this.#seeds[0]!, 0x5bd1e995);
    const h2 = fingerprint(key, this.#seeds[1]!, 0x01000193);
    let slot = this.#find(h1, h2);
    if (slot === 0) {
      if (this.#size === this.#capacity) this.#release(this.#head);
      slot = this.#insert(h1, h2);
    } else {
      this.#unlink(slot);
    }
    this.#append(slot);

    const times = this.#times;
    const base = slot * this.#limit;
    const end = base + this.#limit;
    if (times[end - 1]! > now) clear(times, base, end); // clock went back: start fresh
    // The log holds exactly `limit` entries, so it is full iff its oldest is live.
    const oldest = times[base]!;
    if (oldest !== EMPTY && oldest + this.#windowMs > now) {
      // The wait is positive here, so rounding up makes it at least one second.
      return {
        allowed: false,
        retryAfterSeconds: Math.ceil((oldest + this.#windowMs - now) / 1000),
      };
    }
    for (let i = base; i < end - 1; i++) times[i] = times[i + 1]!; // a log of `limit` entries
    times[end - 1] = now;
    this.#lastAdmit = Math.max(this.#lastAdmit, now + this.#epoch);
    return ALLOWED;
  }

  /** Turns an absolute time into an offset, moving the epoch if `ms` drifted too far. */
  #offset(ms: number): number {
    const offset = ms - this.#epoch;
    if (offset >= DRIFT && offset < CENTRE + DRIFT) return offset;
    const shift = ms - CENTRE - this.#epoch; // NaN on first use, when nothing is stored
    this.#epoch = ms - CENTRE;
    const times = this.#times;
    for (let i = this.#limit; i < (this.#used + 1) * this.#limit; i++) {
      // Offsets pushed below the epoch are long expired (EMPTY); past the top, still "future".
      if (times[i] !== EMPTY) times[i] = Math.min(MAX_OFFSET, Math.max(EMPTY, times[i]! - shift));
    }
    return CENTRE;
  }

  /** Drops idle keys from the least recently used end; returns memory after floods. */
  #sweep(now: number): void {
    if (this.#used >= COMPACT_MIN_SLOTS && this.#lastAdmit + this.#windowMs <= now + this.#epoch) {
      this.#build(); // every stored attempt has expired
      return;
    }
    for (let i = 0; i < SWEEP_BATCH && this.#head !== 0; i++) {
      const newest = this.#times[(this.#head + 1) * this.#limit - 1]!;
      // Recency order is only roughly newest-attempt order (refused takes count
      // as use too), so stopping at a live key merely delays later drops.
      if (newest !== EMPTY && newest + this.#windowMs > now && newest <= now) break;
      this.#release(this.#head);
    }
    if (this.#used >= COMPACT_MIN_SLOTS && this.#size * 4 < this.#used) this.#compact();
  }

  #find(h1: number, h2: number): number {
    let slot = this.#buckets[h1 & (this.#buckets.length - 1)]!;
    while (slot !== 0 && (this.#fp1[slot] !== h1 || this.#fp2[slot] !== h2)) {
      slot = this.#chain[slot]!;
    }
    return slot;
  }

  /** Registers a fingerprint in a free slot with an empty log; the caller appends it. */
  #insert(h1: number, h2: number): number {
    let slot = this.#free;
    if (slot !== 0) this.#free = this.#next[slot]!;
    else slot = ++this.#used;
    const bucket = h1 & (this.#buckets.length - 1);
    this.#fp1[slot] = h1;
    this.#fp2[slot] = h2;
    clear(this.#times, slot * this.#limit, (slot + 1) * this.#limit);
    this.#chain[slot] = this.#buckets[bucket]!;
    this.#buckets[bucket] = slot;
    this.#size++;
    return slot;
  }

  /** Forgets the key in `slot` and puts the slot on the free list. */
  #release(slot: number): void {
    const bucket = this.#fp1[slot]! & (this.#buckets.length - 1);
    let prev = 0;
    for (let s = this.#buckets[bucket]!; s !== slot; s = this.#chain[s]!) prev = s;
    if (prev === 0) this.#buckets[bucket] = this.#chain[slot]!;
    else this.#chain[prev] = this.#chain[slot]!;
    this.#unlink(slot);
    this.#next[slot] = this.#free;
    this.#free = slot;
    this.#size--;
  }

  #unlink(slot: number): void {
    const prev = this.#prev[slot]!;
    const next = this.#next[slot]!;
    if (prev === 0) this.#head = next;
    else this.#next[prev] = next;
    if (next === 0) this.#tail = prev;
    else this.#prev[next] = prev;
  }

  #append(slot: number): void {
    this.#prev[slot] = this.#tail;
    this.#next[slot] = 0;
    if (this.#tail === 0) this.#head = slot;
    else this.#next[this.#tail] = slot;
    this.#tail = slot;
  }

  /** Allocates empty tables; the OS supplies their zeroed pages lazily. */
  #build(): void {
    const slots = this.#capacity + 1;
    const buckets = 2 ** Math.ceil(Math.log2(Math.max(16, this.#capacity)));
    // One buffer rather than seven: malloc serves a single large block with
    // mmap (its threshold adapts up to 32 MiB), so freeing it returns the pages.
    const memory = new ArrayBuffer(4 * (slots * (5 + this.#limit) + buckets));
    let byteOffset = 0;
    const view = (length: number) => {
      const array = new Uint32Array(memory, byteOffset, length);
      byteOffset += 4 * length;
      return array;
    };
    this.#fp1 = view(slots);
    this.#fp2 = view(slots);
    this.#chain = view(slots);
    this.#prev = view(slots);
    this.#next = view(slots);
    this.#times = view(slots * this.#limit);
    this.#buckets = view(buckets);
    this.#head = this.#tail = this.#free = 0;
    this.#size = this.#used = 0;
  }

  /** Moves the live keys, in recency order, into fresh tables. */
  #compact(): void {
    const [fp1, fp2, times, next] = [this.#fp1, this.#fp2, this.#times, this.#next];
    const limit = this.#limit;
    let slot = this.#head;
    this.#build();
    for (; slot !== 0; slot = next[slot]!) {
      const fresh = this.#insert(fp1[slot]!, fp2[slot]!);
      this.#times.set(times.subarray(slot * limit, (slot + 1) * limit), fresh * limit);
      this.#append(fresh);
    }
  }
}

/**
 * IPv4 addresses are their own key; IPv6 addresses are grouped by their /64
 * (one subscriber owns a /64), e.g. "2001:db8:1:2::/64". Input that is not an
 * IP address is used as-is.
 */
export function rateLimitKey(address: string): string {
  // Canonical IPv4 (as clientAddress returns it) is its own key: skip the parse on the hot path.
  if (isCanonicalIpv4(address)) return address;
  const network = ipv6Network64(address);
  if (network !== null) return `${network}/64`;
  return canonicalIp(address) ?? address;
}

/**
 * `array.fill(EMPTY, start, end)` for the few entries of one log: V8 runs typed-array `fill` and
 * `copyWithin` as C++ builtins, and for five entries the calls cost more than plain loops (about
 * 60 ns per new address together, measured with `deno bench`).
 */
function clear(array: Uint32Array, start: number, end: number): void {
  for (let i = start; i < end; i++) array[i] = EMPTY;
}

/** One 32-bit lane of a key's fingerprint: seeded multiplicative hashing, murmur3 finish. */
function fingerprint(key: string, seed: number, multiplier: number): number {
  let h = seed ^ key.length;
  for (let i = 0; i < key.length; i++) {
    h = Math.imul(h ^ key.charCodeAt(i), multiplier);
    h ^= h >>> 15;
  }
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
