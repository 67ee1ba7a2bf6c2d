/**
 * The spam challenge of `POST /api/contact`: the gate both kinds share, and ALTCHA (a
 * self-hosted proof of work, created and verified by the npm package `altcha-lib`) with its
 * bounded, expiring set of solutions already used, kept for as long as a solution could be valid
 * by either the wall clock or the monotonic clock (a clock stepped forward and back replays
 * nothing).
 *
 * @module
 */
import { createChallenge, verifySolution } from "altcha-lib/v1";

/** What a challenge check concluded; each refusal is an error code of lib/http/errors.ts. */
export type ChallengeVerdict =
  | "passed"
  | "challenge_required"
  | "challenge_failed"
  | "challenge_unavailable";

/** A challenge a POST must pass after the honeypot and before validation. */
export interface ChallengeGate {
  /** The body field (JSON and urlencoded) that carries the proof. */
  readonly field: "altcha" | "cf-turnstile-response";
  /**
   * Checks the field's value (`undefined` when absent) for the client at `ip`, at `nowMs`.
   * Never rejects: an outage is `challenge_unavailable`.
   */
  check(value: unknown, ip: string, nowMs: number): Promise<ChallengeVerdict>;
  /**
   * Uses up a proof `check` passed, synchronously (no await between its look-up and its record,
   * so two posts of one proof cannot both pass): called only for a submission that passed
   * validation, so refused posts use up nothing. Absent when the kind keeps no record (Turnstile:
   * Cloudflare spends each token itself).
   */
  consume?: (value: unknown, nowMs: number) => ChallengeVerdict;
  /** A fresh challenge for `GET /api/challenge`; absent when the kind has none (Turnstile). */
  issue?: (nowMs: number) => Promise<unknown>;
}

/** The only hash accepted: what {@linkcode Altcha.issue} signs with. */
export const ALTCHA_ALGORITHM = "SHA-256";

/**
 * The largest secret number of a challenge. A solver tries on average half of it, one SHA-256
 * each through WebCrypto: about 10 µs a hash in the browser test's headless Chromium (it prints
 * the time), so 0.1 s on average and 0.2 s at worst there, and about three times that on a
 * mid-range phone: under the widget's own 0.5 s minimum display time, so visitors do not wait for
 * it. A native solver pays far less: what stops bots is needing a fresh signed challenge, used
 * once, for every message (altcha's own default, 1e6, would cost phones several seconds).
 */
export const ALTCHA_MAX_NUMBER = 20_000;

/** How long a challenge may be solved and sent: 10 minutes. */
export const ALTCHA_TTL_MS = 10 * 60_000;

/** The most solutions remembered at once; beyond it new solutions are refused (503). */
export const REPLAY_CAPACITY = 100_000;

/** Longest `altcha` value looked at: a real payload is about 300 characters of base64. */
const MAX_PAYLOAD_LENGTH = 2_000;
const SIGNATURE = /^[0-9a-f]{64}$/;

/** Options of {@linkcode Altcha}. */
export interface AltchaOptions {
  /** `CHALLENGE_SECRET`: the HMAC key. Never logged or answered. */
  readonly secret: string;
  /** Default {@linkcode ALTCHA_MAX_NUMBER}. */
  readonly maxNumber?: number;
  /** Default {@linkcode ALTCHA_TTL_MS}. */
  readonly ttlMs?: number;
  /** Default {@linkcode REPLAY_CAPACITY}. */
  readonly replayCapacity?: number;
  /**
   * Told, at most once a minute, that a solution was refused (`challenge_unavailable`) because
   * the set of used solutions is full of unexpired ones.
   */
  readonly onFull?: () => void;
  /**
   * `now`: a monotonic clock (default `performance.now`); `wallNow`: the system clock that
   * altcha-lib reads for expiry (default `Date.now`). The service's clock has this shape.
   */
  readonly clock?: { readonly now: () => number; readonly wallNow: () => number };
}

/** How often, at most, {@linkcode AltchaOptions.onFull} is told the set is full. */
export const FULL_WARNING_INTERVAL_MS = 60_000;

/**
 * ALTCHA: `issue` answers an HMAC-signed challenge that expires; `check` accepts a solved
 * payload once. Hashing, signing and expiry are altcha-lib's (`createChallenge`,
 * `verifySolution`, which reads the system clock for the expiry it signed into the salt).
 */
export class Altcha implements ChallengeGate {
  readonly field = "altcha" as const;
  readonly #secret: string;
  readonly #maxNumber: number;
  readonly #ttlMs: number;
  readonly #used: ReplaySet;
  readonly #onFull: (() => void) | undefined;
  readonly #monotonicNow: () => number;
  readonly #wallNow: () => number;
  #lastFullWarningMs = -Infinity;

  /** Builds the gate; the secret is validated by lib/config/config.ts. */
  constructor(options: AltchaOptions) {
    this.#secret = options.secret;
    this.#maxNumber = options.maxNumber ?? ALTCHA_MAX_NUMBER;
    this.#ttlMs = options.ttlMs ?? ALTCHA_TTL_MS;
    this.#used = new ReplaySet(options.replayCapacity ?? REPLAY_CAPACITY);
    this.#onFull = options.onFull;
    this.#monotonicNow = options.clock?.now ?? (() => performance.now());
    this.#wallNow = options.clock?.wallNow ?? Date.now;
  }

  /** A fresh challenge (altcha-lib's `createChallenge`), expiring `ttlMs` after `nowMs`. */
  issue(nowMs: number): Promise<unknown> {
    return createChallenge({
      hmacKey: this.#secret,
      algorithm: ALTCHA_ALGORITHM,
      maxNumber: this.#maxNumber,
      expires: new Date(nowMs + this.#ttlMs),
    });
  }

  /**
   * `challenge_required` when absent or blank; `challenge_failed` when malformed, of another
   * algorithm, unsigned by this secret, wrongly solved, expired (at its expiry millisecond too,
   * by `nowMs` or the wall clock, whichever is later) or already used. Records nothing: a
   * passed solution is used up by {@linkcode Altcha.consume}.
   */
  async check(value: unknown, _ip: string, nowMs: number): Promise<ChallengeVerdict> {
    if (value === undefined || value === null || value === "") return "challenge_required";
    const payload = decodePayload(value);
    if (payload === undefined || this.#spent(payload, nowMs)) return "challenge_failed";
    let verified: boolean;
    try {
      verified = await verifySolution(payload, this.#secret, true);
    } catch {
      verified = false;
    }
    if (!verified) return "challenge_failed";
    // Checked again: the clock moved, or another post of it was used up, while verifying.
    return this.#spent(payload, nowMs) ? "challenge_failed" : "passed";
  }

  /**
   * Uses up a solution {@linkcode Altcha.check} passed, for a valid submission: `passed` once,
   * then `challenge_failed`; `challenge_unavailable` when the set of used solutions is full of
   * unexpired ones (told to `onFull` at most once a minute). Synchronous: look-up and record
   * happen together.
   */
  consume(value: unknown, nowMs: number): ChallengeVerdict {
    const payload = decodePayload(value);
    if (payload === undefined || this.#spent(payload, nowMs)) return "challenge_failed";
    // Kept until it has expired by the wall clock (read as early as either reading says) and
    // as long again by the monotonic clock: a wall clock stepped forward, then back, forgets
    // nothing that altcha-lib would accept again.
    const now = this.#instant(nowMs);
    const expires = expiresMs(payload);
    const lasts = { wall: expires, monotonic: now.monotonic + Math.max(0, expires - now.wall) };
    if (this.#used.add(payload.signature, lasts, now)) return "passed";
    if (nowMs - this.#lastFullWarningMs >= FULL_WARNING_INTERVAL_MS) {
      this.#lastFullWarningMs = nowMs;
      this.#onFull?.();
    }
    return "challenge_unavailable";
  }

  /**
   * Expired or already used. Expired when its expiry is not after `nowMs` nor after the system
   * clock (altcha-lib refuses only past the expiry; the replay set forgets at it, so the expiry
   * millisecond itself must be refused here). The signature covers the challenge, which covers
   * the salt (and so the expiry): it names the challenge, and each is accepted once, however its
   * number is written.
   */
  #spent(payload: AltchaPayload, nowMs: number): boolean {
    return expiresMs(payload) <= Math.max(nowMs, this.#wallNow()) ||
      this.#used.has(payload.signature, this.#instant(nowMs));
  }

  /** Now by both clocks; the wall clock's earlier reading, so nothing is forgotten early. */
  #instant(nowMs: number): Instant {
    return { wall: Math.min(nowMs, this.#wallNow()), monotonic: this.#monotonicNow() };
  }
}

/** A moment by the wall clock and by the monotonic clock, in ms. */
export interface Instant {
  readonly wall: number;
  readonly monotonic: number;
}

/** True when `expires` has passed by both clocks at `now`. */
function _expired(expires: Instant, now: Instant): boolean {
  return expires.wall <= now.wall && expires.monotonic <= now.monotonic;
}

/** The expiry a payload's salt carries (`?expires=` seconds), in ms since the epoch. */
function expiresMs(payload: AltchaPayload): number {
  return Number(new URLSearchParams(payload.salt.split("?")[1] ?? "").get("expires")) * 1000;
}

/** A decoded `altcha` payload, shaped as altcha-lib's `verifySolution` takes it. */
export interface AltchaPayload {
  readonly algorithm: "SHA-256";
  readonly challenge: string;
  readonly number: number;
  readonly salt: string;
  readonly signature: string;
}

/**
 * Decodes the base64 JSON the widget sends, or `undefined` when it is not one: only
 * {@linkcode ALTCHA_ALGORITHM}, a whole number within range, hex challenge and signature, and a
 * salt that carries an expiry (every challenge issued here does).
 */
export function decodePayload(value: unknown): AltchaPayload | undefined {
  if (typeof value !== "string" || value.length > MAX_PAYLOAD_LENGTH) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(atob(value.trim()));
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { algorithm, challenge, number, salt, signature } = parsed as Record<string, unknown>;
  if (
    algorithm !== ALTCHA_ALGORITHM || typeof challenge !== "string" ||
    !SIGNATURE.test(challenge) || typeof signature !== "string" || !SIGNATURE.test(signature) ||
    typeof number !== "number" || !Number.isSafeInteger(number) || number < 0 ||
    typeof salt !== "string" || salt.length > 500 || !/[?&]expires=\d{1,12}&/.test(salt)
  ) {
    return undefined;
  }
  return { algorithm, challenge, number, salt, signature };
}

/**
 * Solutions already accepted, each until its challenge has expired by both clocks (after that
 * altcha-lib refuses the challenge anyway). Bounded: at `capacity` entries, expired ones are
 * dropped; if none has expired, `add` refuses rather than forget one (forgetting would let it be
 * replayed).
 */
export class ReplaySet {
  readonly #capacity: number;
  readonly #entries = new Map<string, Instant>(); // key → expiry by each clock
  #lastFullSweepMs = -Infinity;

  /** A set holding at most `capacity` keys. */
  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError("capacity must be >= 1");
    }
    this.#capacity = capacity;
  }

  /** How many keys are held. */
  get size(): number {
    return this.#entries.size;
  }

  /** True when `key` was added and has not expired by both clocks at `now`. */
  has(key: string, now: Instant): boolean {
    const expires = this.#entries.get(key);
    return expires !== undefined && !_expired(expires, now);
  }

  /**
   * Remembers `key` until `expires` has passed by both clocks; false when the set is full of
   * unexpired keys. Expired keys at the oldest end go on every call; a full sweep runs at most
   * once a second (monotonic), so a flood at the bound costs no more than a scan per second.
   */
  add(key: string, expires: Instant, now: Instant): boolean {
    for (const [oldest, held] of this.#entries) {
      if (!_expired(held, now)) break;
      this.#entries.delete(oldest);
    }
    if (
      this.#entries.size >= this.#capacity && now.monotonic - this.#lastFullSweepMs >= 1_000
    ) {
      this.#lastFullSweepMs = now.monotonic;
      for (const [stale, held] of this.#entries) {
        if (_expired(held, now)) this.#entries.delete(stale);
      }
    }
    if (this.#entries.size >= this.#capacity) return false;
    this.#entries.set(key, expires);
    return true;
  }
}
