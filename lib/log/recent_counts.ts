/**
 * Counts of what happened in the last 24 hours (delivered, held as spam, refused by the rate
 * limiter), for the chat's `/status`: hourly buckets on a clock the caller passes in, so nothing
 * here reads a clock. Kept in memory: a restart starts from zero (documented in the README).
 *
 * @module
 */

/** The window `/status` reports: 24 hours. */
export const RECENT_WINDOW_MS = 86_400_000;

/** One bucket's span: an hour (the window is off by at most this much). */
const BUCKET_MS = 3_600_000;

/** Counts per name over the last {@linkcode RECENT_WINDOW_MS}, in hourly buckets. */
export class RecentCounts {
  /** Per bucket start (ms): counts by name. */
  readonly #buckets = new Map<number, Map<string, number>>();

  /** Counts one `name` at `now` (ms, any clock that only moves forward). */
  add(name: string, now: number): void {
    this.#trim(now);
    const start = Math.floor(now / BUCKET_MS) * BUCKET_MS;
    const bucket = this.#buckets.get(start) ?? new Map<string, number>();
    bucket.set(name, (bucket.get(name) ?? 0) + 1);
    this.#buckets.set(start, bucket);
  }

  /** How many of `name` were counted in the window ending at `now`. */
  count(name: string, now: number): number {
    this.#trim(now);
    let total = 0;
    for (const bucket of this.#buckets.values()) total += bucket.get(name) ?? 0;
    return total;
  }

  /** Drops the buckets that ended before the window: memory stays at 25 buckets at most. */
  #trim(now: number): void {
    for (const start of this.#buckets.keys()) {
      if (start + BUCKET_MS <= now - RECENT_WINDOW_MS) this.#buckets.delete(start);
    }
  }
}
