import assert from "node:assert/strict";
import { Drain, DRAIN_CAP_MS, DRAIN_GRACE_MS, type DrainEnd } from "../../lib/http/drain.ts";
import type { Handler } from "../../lib/http/handler.ts";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";
import { fakeClock } from "../support/fake_clock.ts";

const PEER = { remoteAddr: { hostname: "127.0.0.1" } };
const REQUEST = new Request("http://localhost/api/contact", { method: "POST" });

/** A drain on a fake clock, its log, and a handler whose answers the test gives. */
function world() {
  const clock = fakeClock();
  const logs: Array<{ level: LogLevel } & LogFields> = [];
  const drain = new Drain({
    setTimer: clock.setTimer,
    clearTimer: clock.clearTimer,
    log: (level, fields) => logs.push({ level, ...fields }),
  });
  const answers: Array<(response: Response) => void> = [];
  const handler: Handler = drain.track(() => {
    const { promise, resolve } = Promise.withResolvers<Response>();
    answers.push(resolve);
    return promise;
  });
  /** Where `bounded` is: its end once it has one. */
  const watch = (finished: Promise<void>) => {
    const seen: { end?: DrainEnd } = {};
    drain.bounded(finished).then((end) => seen.end = end);
    return seen;
  };
  return { clock, logs, drain, handler, answers, watch };
}

const never = new Promise<void>(() => {});

Deno.test("the drain counts each request from its call to its answer, sync, async or thrown", async () => {
  const { drain, handler, answers } = world();
  void handler(REQUEST, PEER);
  void handler(REQUEST, PEER);
  assert.equal(drain.running, 2);
  answers[0]!(new Response("a"));
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(drain.running, 1);
  const sync = drain.track(() => new Response("b"));
  sync(REQUEST, PEER);
  assert.equal(drain.running, 1);
  const throwing = drain.track(() => {
    throw new Error("a bug");
  });
  assert.throws(() => throwing(REQUEST, PEER), /a bug/);
  assert.equal(drain.running, 1);
});

Deno.test("the drain's stop aborts its signal, the bodies' end, once", () => {
  const { drain } = world();
  let aborts = 0;
  drain.signal.addEventListener("abort", () => aborts++);
  assert.equal(drain.signal.aborted, false);
  drain.stop();
  drain.stop();
  assert.equal(drain.signal.aborted, true);
  assert.equal(aborts, 1);
});

Deno.test("a server that closes by itself ends the drain as closed, nothing cut or logged", async () => {
  const { clock, logs, drain, watch } = world();
  const { promise: finished, resolve } = Promise.withResolvers<void>();
  const seen = watch(finished);
  drain.stop();
  await clock.advance(DRAIN_GRACE_MS - 1);
  resolve();
  await clock.advance(DRAIN_CAP_MS);
  assert.deepEqual(seen.end, { kind: "closed" });
  assert.deepEqual(logs, []);
});

Deno.test("a server held open once every request is answered is cut DRAIN_GRACE_MS after the last answer", async () => {
  const { clock, logs, drain, handler, answers, watch } = world();
  void handler(REQUEST, PEER);
  const seen = watch(never);
  drain.stop();
  // A request still in flight (a delivery the stop waits for) holds the drain.
  await clock.advance(DRAIN_GRACE_MS * 2);
  assert.equal(seen.end, undefined);
  answers[0]!(new Response("answered"));
  await clock.advance(DRAIN_GRACE_MS - 1);
  assert.equal(seen.end, undefined);
  await clock.advance(1);
  assert.deepEqual(seen.end, { kind: "cut", after: "idle", running: 0 });
  assert.deepEqual(logs, [{ level: "info", event: "connections_cut", after: "idle", running: 0 }]);
});

Deno.test("a request arriving while the drain is idle holds it again until its answer", async () => {
  const { clock, drain, handler, answers, watch } = world();
  const seen = watch(never);
  drain.stop();
  await clock.advance(DRAIN_GRACE_MS - 1000);
  void handler(REQUEST, PEER);
  await clock.advance(DRAIN_GRACE_MS);
  assert.equal(seen.end, undefined);
  answers[0]!(new Response("answered"));
  await clock.advance(DRAIN_GRACE_MS);
  assert.deepEqual(seen.end, { kind: "cut", after: "idle", running: 0 });
});

Deno.test("requests that never answer are cut DRAIN_CAP_MS after the stop, a warning with how many", async () => {
  const { clock, logs, drain, handler, watch } = world();
  void handler(REQUEST, PEER);
  void handler(REQUEST, PEER);
  const seen = watch(never);
  drain.stop();
  await clock.advance(DRAIN_CAP_MS - 1);
  assert.equal(seen.end, undefined);
  await clock.advance(1);
  assert.deepEqual(seen.end, { kind: "cut", after: "cap", running: 2 });
  assert.deepEqual(logs, [{ level: "warn", event: "connections_cut", after: "cap", running: 2 }]);
});

Deno.test("the drain's bound starts only once both the stop and the wait for the server have begun", async () => {
  // A stop during start-up, before the server listens: the time until it does is not counted.
  const { clock, drain, watch } = world();
  drain.stop();
  await clock.advance(DRAIN_CAP_MS * 2);
  const seen = watch(never);
  await clock.advance(DRAIN_GRACE_MS - 1);
  assert.equal(seen.end, undefined);
  await clock.advance(1);
  assert.deepEqual(seen.end, { kind: "cut", after: "idle", running: 0 });
  // And a wait with no stop never ends by itself.
  const other = world();
  const waiting = other.watch(never);
  await other.clock.advance(DRAIN_CAP_MS * 2);
  assert.equal(waiting.end, undefined);
});
