/**
 * The send queue over the real outbox (a real database in a temporary directory) and a fake clock: messages
 * Telegram refuses for good, more of them than the outbox's window holds, must not hold up the
 * rest.
 */
import assert from "node:assert/strict";
import { DeliveryQueue } from "../../lib/delivery/queue.ts";
import { Pacer } from "../../lib/delivery/pacer.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import type { BotApiResult } from "../../lib/bot/api.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { open } from "../storage/_outbox_setup.ts";
import { fakeClock } from "../support/fake_clock.ts";

const submission = (i: number, message: string): OutboxSubmission => ({
  id: `r${String(i).padStart(7, "0")}`,
  ts: "2026-11-22T14:03:09Z",
  name: "Ann",
  contact: "",
  message,
  ip: "203.0.113.7",
});

const REFUSED = 40;

Deno.test("submissions Telegram always refuses, more than the outbox's window holds, are given up one by one, so the good ones on disk behind them are read in and delivered", async () => {
  // A window of 16 stands for the default 1,024 (the case was 1,030 such entries).
  const outbox = await open({}, { window: 16 });
  const refused = new Set<string>();
  for (let i = 0; i < REFUSED; i++) {
    const s = submission(i, `refused ${i}`);
    refused.add(s.id);
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  for (let i = 0; i < 3; i++) {
    const s = submission(REFUSED + i, `good ${i}`);
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  assert.equal(outbox.pendingCount, REFUSED + 3);
  assert.ok([...outbox.entries()].length <= 16, "the last ones wait in the database");

  const clock = fakeClock(1_000_000);
  const delivered: string[] = [];
  const logs: LogFields[] = [];
  // Every text naming a refused id is refused, the notice without the sender's text included.
  const tooLong: BotApiResult = {
    ok: false,
    error: "400 Bad Request: message is too long",
    errorCode: 400,
  };
  const queue = new DeliveryQueue({
    chatId: 4242,
    send: (text) => {
      const id = /#(r\d{7})/.exec(text)?.[1] ?? "";
      if (refused.has(id)) return Promise.resolve(tooLong);
      delivered.push(text.split("\n").at(-1)!);
      return Promise.resolve({ ok: true, result: {} });
    },
    store: outbox,
    pacer: new Pacer(),
    clock,
    random: () => 0.5,
    log: (_level, fields) => logs.push(fields),
    waitMs: 10_000,
    maxAgeMs: 7 * 86_400_000,
  });
  queue.start();
  // Two sends each, paced at one a second.
  await clock.advance((2 * REFUSED + 10) * 1000);
  assert.deepEqual(delivered, ["good 0", "good 1", "good 2"]);
  const givenUp = logs.filter((l) => l.event === "delivery_given_up" && l.reason === "refused");
  assert.equal(givenUp.length, REFUSED);
  assert.equal(outbox.pendingCount, 0);
  assert.deepEqual(queue.status(), { state: "ok" });
  await queue.close();
  await outbox.close();
});
