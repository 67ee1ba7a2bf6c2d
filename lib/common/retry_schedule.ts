/**
 * When to try an undelivered submission again: exponential back-off from a second to about ten
 * minutes, with jitter so that retries after an outage do not arrive in step.
 *
 * @module
 */

/** The first retry's delay, before jitter. */
export const RETRY_BASE_MS = 1000;
/** The longest delay between two tries, before jitter. */
export const RETRY_CAP_MS = 600_000;

/**
 * The delay before try number `failures + 1`, after `failures` (≥ 1) failed tries in a row:
 * `RETRY_BASE_MS · 2^(failures − 1)`, at most `capMs` (`RETRY_CAP_MS`), then "equal jitter": a random point
 * between half of it and all of it. `random` returns a number in [0, 1).
 */
export function retryDelayMs(
  failures: number,
  random: () => number,
  capMs: number = RETRY_CAP_MS,
): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 30);
  const delay = Math.min(capMs, RETRY_BASE_MS * 2 ** exponent);
  return delay / 2 + (delay / 2) * random();
}

/**
 * How long to wait before trying the API again during an outage that began `outageMs` ago: as long
 * as it has lasted so far (from a second to `RETRY_CAP_MS`), with the same jitter. Tries then come
 * at about 1, 2, 4, 8 … seconds into the outage however many submissions fail meanwhile, and an
 * outage is noticed to be over within about its own length.
 */
export function outageDelayMs(outageMs: number, random: () => number): number {
  const delay = Math.min(RETRY_CAP_MS, Math.max(RETRY_BASE_MS, outageMs));
  return delay / 2 + (delay / 2) * random();
}
