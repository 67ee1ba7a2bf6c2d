import assert from "node:assert/strict";
import {
  afterFailure,
  afterSuccess,
  afterTokenAccepted,
  afterTokenRefused,
  answersAtOnceUntil,
  backlogResumesAt,
  type DeliveryHealth,
  deliveryStatus,
  HEALTHY,
  PAUSE_PROBE_MS,
  type SendFailure,
} from "../../lib/delivery/health.ts";
import { fakeClock } from "../support/fake_clock.ts";

/** A failure at the clock's time, with the jitter fixed at its middle. */
const failure = (now: number, error: string, settings = false): SendFailure => ({
  now,
  error,
  settings,
  random: () => 0.5,
});

Deno.test("health starts ok: the backlog may go now and senders are tried", () => {
  assert.deepEqual(deliveryStatus(HEALTHY), { state: "ok" });
  assert.equal(backlogResumesAt(HEALTHY), -Infinity);
  assert.equal(answersAtOnceUntil(HEALTHY, 0), undefined);
});

Deno.test("one failure is an outage that backs the backlog off, but senders are still tried (a blip)", () => {
  const clock = fakeClock(5_000);
  const health = afterFailure(HEALTHY, failure(clock.now(), "timeout"));
  assert.deepEqual(deliveryStatus(health), { state: "outage" });
  // An outage of 0 s waits the shortest delay, 1 s, jittered to 0.75 s.
  assert.equal(backlogResumesAt(health), 5_750);
  assert.equal(answersAtOnceUntil(health, clock.now()), undefined);
});

Deno.test("two failures in a row answer new senders at once until the backlog's next try, which comes later the longer the outage lasts", async () => {
  const clock = fakeClock(0);
  let health: DeliveryHealth = afterFailure(HEALTHY, failure(clock.now(), "502 bad gateway"));
  await clock.advance(8_000);
  health = afterFailure(health, failure(clock.now(), "network error: connection refused"));
  assert.equal(health.state === "outage" && health.failures, 2);
  assert.equal(health.state === "outage" && health.lastError, "network error: connection refused");
  // 8 s into the outage: the next try in 8 s, jittered to 6 s.
  assert.equal(backlogResumesAt(health), 14_000);
  assert.equal(answersAtOnceUntil(health, clock.now()), 14_000);
  await clock.advance(6_000);
  assert.equal(answersAtOnceUntil(health, clock.now()), undefined, "the probe's turn");
  await clock.advance(30_000);
  health = afterFailure(health, failure(clock.now(), "timeout"));
  // 44 s into it: 44 s, jittered to 33 s.
  assert.equal(backlogResumesAt(health), clock.now() + 33_000);
});

Deno.test("a settings failure pauses the backlog until a success, whatever fails meanwhile, with its reason, probing it every 10 minutes", () => {
  let health = afterFailure(HEALTHY, failure(0, "timeout"));
  health = afterFailure(health, failure(1_000, "401 Unauthorized", true));
  assert.deepEqual(deliveryStatus(health), { state: "paused", reason: "401 Unauthorized" });
  assert.equal(PAUSE_PROBE_MS, 600_000);
  assert.equal(backlogResumesAt(health), 1_000 + PAUSE_PROBE_MS, "a probe, not never");
  // New submissions still try once each.
  assert.equal(answersAtOnceUntil(health, 1_000), undefined);
  const later = afterFailure(health, failure(2_000, "timeout"));
  assert.deepEqual(deliveryStatus(later), deliveryStatus(health), "a pause lasts until a success");
  assert.equal(backlogResumesAt(later), 2_000 + PAUSE_PROBE_MS, "a failed try puts the probe off");
  const blocked = afterFailure(health, failure(3_000, "403 Forbidden: bot was blocked", true));
  assert.deepEqual(deliveryStatus(blocked), deliveryStatus(health), "the first reason stays");
});

Deno.test("a success ends an outage and a pause alike", () => {
  const outage = afterFailure(afterFailure(HEALTHY, failure(0, "timeout")), failure(10, "timeout"));
  const paused = afterFailure(HEALTHY, failure(0, "400 Bad Request: chat not found", true));
  for (const health of [outage, paused, HEALTHY]) {
    const after = afterSuccess(health);
    assert.deepEqual(deliveryStatus(after), { state: "ok" });
    assert.equal(backlogResumesAt(after), -Infinity);
  }
});

Deno.test("a token refused to any call pauses at once, from ok or an outage, and an answer with the token ends only that pause", () => {
  const clock = fakeClock(0);
  for (
    const before of [HEALTHY, afterFailure(HEALTHY, failure(clock.now(), "timeout"))]
  ) {
    const paused = afterTokenRefused(before, { now: 100, error: "401 Unauthorized" });
    assert.deepEqual(deliveryStatus(paused), { state: "paused", reason: "401 Unauthorized" });
    assert.equal(backlogResumesAt(paused), 100 + PAUSE_PROBE_MS);
    assert.deepEqual(afterTokenAccepted(paused), HEALTHY);
  }
  // A send refused for the token is the same pause.
  const sent = afterFailure(HEALTHY, { ...failure(5, "404 Not Found", true), token: true });
  assert.deepEqual(afterTokenAccepted(sent), HEALTHY);
  // Paused for the chat (the bot removed from the group): a working token proves nothing.
  const chat = afterFailure(HEALTHY, failure(5, "403 Forbidden: bot was kicked", true));
  assert.equal(afterTokenAccepted(chat), chat);
  // Already paused, the first reason stays; ok stays ok.
  assert.equal(afterTokenRefused(chat, { now: 9, error: "401 Unauthorized" }), chat);
  assert.equal(afterTokenAccepted(HEALTHY), HEALTHY);
});
