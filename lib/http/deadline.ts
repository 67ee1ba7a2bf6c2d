/**
 * Body-read deadlines without a timer per request: every request that starts within the same
 * slot (default 1 s) shares one signal, so a flood holds a dozen timers, not one per request
 * for the whole deadline (which cost gigabytes at 50 000 requests/s).
 *
 * @module
 */

/**
 * Returns a function handing out abort signals that fire at least `ms` and at most
 * `ms + slotMs` after the time it is given (in milliseconds: the caller's clock, read once per
 * request anyway, so a jump of the clock only starts a new slot).
 */
export function sharedDeadline(ms: number, slotMs = 1000): (nowMs: number) => AbortSignal {
  let slot = NaN;
  let signal: AbortSignal | undefined;
  return (nowMs) => {
    const current = Math.floor(nowMs / slotMs);
    if (current !== slot || signal === undefined) {
      slot = current;
      // Fires at the end of this slot plus `ms`: no earlier than `ms` after any call in it.
      signal = AbortSignal.timeout(ms + (current + 1) * slotMs - nowMs);
    }
    return signal;
  };
}
