/**
 * How old an outbox entry is, in a way that survives steps of the wall clock (an NTP correction,
 * an operator's `date -s`). A submission carries only the wall-clock time it arrived (`ts`), so:
 *
 * - when the queue first sees an entry in this run, its age is its wall-clock age then, clamped at
 *   0 (a submission from the future is new), and never more than the wall clock as it read at
 *   start, carried forward by the monotonic clock, says: a step since start cannot age it;
 * - from then on it ages by the monotonic clock only.
 *
 * So a clock stepped forward while contactd runs gives nothing up early (and never on the first
 * attempt after the step), and a clock stepped back does not keep a submission past its age.
 * Times are passed in; nothing here reads a clock.
 *
 * @module
 */

/** Ages of entries by id; see the module documentation. */
export class EntryAges {
  /** The wall clock minus the monotonic clock at start. */
  readonly #offset: number;
  /** Per entry seen in this run: when (monotonic), and its age then. */
  readonly #seen = new Map<string, { readonly at: number; readonly age: number }>();

  /** Ages measured from `now` (monotonic ms) and `wallNow` (ms since the epoch), read together. */
  constructor(now: number, wallNow: number) {
    this.#offset = wallNow - now;
  }

  /** The age in ms of entry `id`, received at `ts` (ISO 8601), at `now` and `wallNow`. */
  age(id: string, ts: string, now: number, wallNow: number): number {
    let seen = this.#seen.get(id);
    if (seen === undefined) {
      const received = Date.parse(ts);
      // An unreadable time is no reason to keep or drop anything: it is new when first seen.
      const wallAge = Number.isNaN(received) ? 0 : wallNow - received;
      const startAge = Number.isNaN(received) ? 0 : now + this.#offset - received;
      seen = { at: now, age: Math.max(0, Math.min(wallAge, startAge)) };
      this.#seen.set(id, seen);
    }
    return seen.age + (now - seen.at);
  }

  /** Forgets entry `id` (delivered or given up). */
  forget(id: string): void {
    this.#seen.delete(id);
  }
}
