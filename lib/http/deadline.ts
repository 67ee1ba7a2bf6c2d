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
 * request anyway, so a jump of the clock only starts a new slot), or as soon as `stop` aborts
 * (the service stops: every body still arriving is ended, lib/http/drain.ts), whichever first.
 */
export function sharedDeadline(
  ms: number,
  slotMs = 1000,
  stop?: AbortSignal,
): (nowMs: number) => AbortSignal {
  let slot = NaN;
  let signal: AbortSignal | undefined;
  return (nowMs) => {
    if (stop?.aborted === true) return stop;
    const current = Math.floor(nowMs / slotMs);
    if (current !== slot || signal === undefined) {
      slot = current;
      // Fires at the end of this slot plus `ms`: no earlier than `ms` after any call in it.
      const timeout = AbortSignal.timeout(ms + (current + 1) * slotMs - nowMs);
      signal = stop === undefined ? timeout : _untilStop(timeout, stop);
    }
    return signal;
  };
}

/**
 * A signal that aborts with `timeout` or with `stop`, whichever first; its listener on the
 * long-lived `stop` is removed once `timeout` fires (one slot a second must not pile up there).
 */
function _untilStop(timeout: AbortSignal, stop: AbortSignal): AbortSignal {
  const either = new AbortController();
  const end = () => {
    stop.removeEventListener("abort", end);
    timeout.removeEventListener("abort", end);
    either.abort();
  };
  stop.addEventListener("abort", end);
  timeout.addEventListener("abort", end);
  return either.signal;
}
