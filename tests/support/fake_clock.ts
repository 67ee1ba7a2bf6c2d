/**
 * A clock for unit tests: time moves only when the test says, timers fire in order, and the
 * promises they resolve run before the next one fires. No test sleeps.
 *
 * @module
 */

/** A fake monotonic clock with timers (the shape of lib/delivery/queue.ts's `DeliveryClock`). */
export interface FakeClock {
  now(): number;
  wallNow(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  advance(ms: number): Promise<void>;
  /** Lets pending promise callbacks run without moving time. */
  settle(): Promise<void>;
}

/** A fake clock at `start` (monotonic ms); the wall clock is `wallStart` plus the same offset. */
export function fakeClock(start = 0, wallStart = Date.parse("2026-11-22T14:03:09Z")): FakeClock {
  let now = start;
  let nextId = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const settle = async () => {
    // Several macrotask turns: chains of awaits inside the code under test finish.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  };
  return {
    now: () => now,
    wallNow: () => wallStart + (now - start),
    setTimer(fn, ms) {
      const id = nextId++;
      timers.set(id, { at: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimer(handle) {
      timers.delete(handle as number);
    },
    async advance(ms) {
      const target = now + ms;
      await settle();
      while (true) {
        let due: [number, { at: number; fn: () => void }] | undefined;
        for (const entry of timers) {
          if (entry[1].at <= target && (due === undefined || entry[1].at < due[1].at)) due = entry;
        }
        if (due === undefined) break;
        timers.delete(due[0]);
        now = Math.max(now, due[1].at);
        due[1].fn();
        await settle();
      }
      now = target;
      await settle();
    },
    settle,
  };
}
