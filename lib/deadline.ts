/**
 * Body-read deadlines without a timer per request: every request that starts within the same
 * slot (default 1 s) shares one signal, so a flood holds a dozen timers, not one per request
 * for the whole deadline (which cost gigabytes at 50 000 requests/s).
 *
 * @module
 */

/**
 * Returns a function handing out abort signals that fire at least `ms` and at most
 * `ms + slotMs` after the call. `now` is a clock in milliseconds (monotonic by default).
 */
export function sharedDeadline(
  ms: number,
  slotMs = 1000,
  now: () => number = () => performance.now(),
): () => AbortSignal {
  let slot = NaN;
  let signal: AbortSignal | undefined;
  return () => {
    const time = now();
    const current = Math.floor(time / slotMs);
    if (current !== slot || signal === undefined) {
      slot = current;
      // Fires at the end of this slot plus `ms`: no earlier than `ms` after any call in it.
      signal = AbortSignal.timeout(ms + (current + 1) * slotMs - time);
    }
    return signal;
  };
}
