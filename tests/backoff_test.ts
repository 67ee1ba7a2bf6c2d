import assert from "node:assert/strict";
import { withBackoff } from "../lib/backoff.ts";
import type { DeliveryResult } from "../lib/telegram.ts";

function setup(replies: DeliveryResult[]) {
  const clock = { now: 1_000_000 };
  const calls: string[] = [];
  const deliver = withBackoff((text) => {
    calls.push(text);
    return Promise.resolve(replies.shift() ?? { ok: true, parts: 1 });
  }, () => clock.now);
  return { clock, calls, deliver };
}

const FLOOD: DeliveryResult = {
  ok: false,
  error: "429 Too Many Requests: retry after 30",
  retryAfterSeconds: 30,
};

Deno.test("back-off: after a 429 with retry_after 30 s no call is made for 30 s", async () => {
  const { clock, calls, deliver } = setup([FLOOD]);
  assert.deepEqual(await deliver("a"), FLOOD);
  assert.deepEqual(await deliver("b"), {
    ok: false,
    error: "rate limited by the messenger, retry after 30 s",
  });
  clock.now += 29_999;
  assert.deepEqual(await deliver("c"), {
    ok: false,
    error: "rate limited by the messenger, retry after 1 s",
  });
  assert.deepEqual(calls, ["a"]);
});

Deno.test("back-off: a call exactly when retry_after has passed goes through", async () => {
  const { clock, calls, deliver } = setup([FLOOD]);
  await deliver("a");
  clock.now += 30_000;
  assert.deepEqual(await deliver("b"), { ok: true, parts: 1 });
  assert.deepEqual(calls, ["a", "b"]);
  assert.deepEqual(await deliver("c"), { ok: true, parts: 1 }); // and the window stays closed
});

Deno.test("back-off: the window starts when the 429 arrived, not when the call began", async () => {
  const clock = { now: 0 };
  const deliver = withBackoff(() => {
    clock.now += 4_000; // the call itself took 4 s
    return Promise.resolve(FLOOD);
  }, () => clock.now);
  await deliver("a");
  clock.now = 33_999;
  assert.equal((await deliver("b")).ok, false);
  clock.now = 34_000;
  assert.deepEqual(await deliver("c"), FLOOD); // forwarded again (and refused again)
});

Deno.test("back-off: failures without retry_after and successes open no window", async () => {
  const { calls, deliver } = setup([
    { ok: false, error: "timeout" },
    { ok: false, error: "400 Bad Request: chat not found" },
    { ok: true, parts: 1 },
  ]);
  for (const text of ["a", "b", "c", "d"]) await deliver(text);
  assert.deepEqual(calls, ["a", "b", "c", "d"]);
});

Deno.test("back-off: a shorter retry_after never shortens an open window", async () => {
  const { clock, calls, deliver } = setup([
    FLOOD,
    { ok: false, error: "429 Too Many Requests: retry after 1", retryAfterSeconds: 1 },
  ]);
  const concurrent = [deliver("a"), deliver("b")]; // both started before either answer
  await Promise.all(concurrent);
  clock.now += 29_000;
  assert.equal((await deliver("c")).ok, false);
  assert.deepEqual(calls, ["a", "b"]);
});
