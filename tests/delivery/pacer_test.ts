import assert from "node:assert/strict";
import { CALLS_ONLY_CHAT, Pacer, TELEGRAM_LIMITS } from "../../lib/delivery/pacer.ts";

const CHAT = 4242;
const GROUP = -100123;

/** Sends `count` messages to `chatId`, each as soon as the pacer allows; their times. */
function drain(pacer: Pacer, chatId: number, count: number, from = 0): number[] {
  const times: number[] = [];
  let now = from;
  for (let i = 0; i < count; i++) {
    now = pacer.readyAt(chatId, now);
    pacer.sent(chatId, now);
    times.push(now);
  }
  return times;
}

Deno.test("Pacer allows a burst of 3 to one chat, then one message a second", () => {
  const times = drain(new Pacer(), CHAT, 6);
  assert.deepEqual(times, [0, 0, 0, 1000, 2000, 3000]);
});

Deno.test("Pacer refills one chat's burst while it is quiet, up to 3", () => {
  const pacer = new Pacer();
  drain(pacer, CHAT, 3);
  assert.equal(pacer.readyAt(CHAT, 500), 1000);
  assert.deepEqual(drain(pacer, CHAT, 4, 10_000), [10_000, 10_000, 10_000, 11_000]);
});

Deno.test("Pacer keeps a group, supergroup or channel to 20 messages in any minute", () => {
  const times = drain(new Pacer(), GROUP, 45);
  for (let i = 20; i < times.length; i++) {
    assert.ok(times[i]! - times[i - 20]! >= 60_000, `message ${i}`);
  }
  // The 21st waits for the first to leave the window (with the margin).
  assert.equal(times[20], TELEGRAM_LIMITS.group.windowMs);
  // A private chat has no per-minute limit.
  assert.equal(drain(new Pacer(), CHAT, 45).at(-1), 42_000);
});

Deno.test("Pacer keeps all chats together to 30 messages a second", () => {
  const pacer = new Pacer();
  const times: number[] = [];
  let now = 0;
  for (let chat = 1; chat <= 40; chat++) {
    now = pacer.readyAt(chat, now);
    pacer.sent(chat, now);
    times.push(now);
  }
  assert.equal(times.filter((t) => t === 0).length, 30);
  assert.ok(times.slice(30).every((t) => t >= TELEGRAM_LIMITS.overall.windowMs));
});

Deno.test("Pacer.readyAfter says when the last of n more messages may go, as sending them would", () => {
  for (const chatId of [CHAT, GROUP]) {
    for (const count of [1, 2, 3, 5, 25]) {
      const pacer = new Pacer();
      drain(pacer, chatId, 2, 0);
      const predicted = pacer.readyAfter(chatId, count, 500);
      assert.equal(predicted, drain(pacer, chatId, count, 500).at(-1), `${chatId} × ${count}`);
    }
  }
});

Deno.test("Pacer pauses everything until a 429's end, and a shorter pause never shortens it", () => {
  const pacer = new Pacer();
  pacer.pause(5000);
  pacer.pause(2000);
  assert.equal(pacer.pausedUntil, 5000);
  assert.equal(pacer.readyAt(CHAT, 0), 5000);
  assert.equal(pacer.readyAt(GROUP, 100), 5000);
  assert.equal(pacer.readyAfter(CHAT, 4, 0), 6000); // the burst after the pause, then 1/s
  assert.equal(pacer.readyAt(CHAT, 7000), 7000);
});

Deno.test("Pacer gives calls at most their share of a group's window (notifications keep the rest); the toasts' chat has no share", () => {
  const pacer = new Pacer();
  const share = Math.floor(TELEGRAM_LIMITS.group.count * TELEGRAM_LIMITS.callShare);
  for (let i = 0; i < share; i++) {
    assert.equal(pacer.callReadyAt(GROUP, i * 3000), i * 3000);
    pacer.sent(GROUP, i * 3000, true);
  }
  assert.equal(pacer.callReadyAt(GROUP, share * 3000), TELEGRAM_LIMITS.group.windowMs);
  // Notifications are not held by the calls' share.
  assert.equal(pacer.readyAt(GROUP, share * 3000), share * 3000);
  for (let i = 0; i < 100; i++) pacer.sent(CALLS_ONLY_CHAT, i, true);
  assert.equal(pacer.callReadyAt(CALLS_ONLY_CHAT, 100), 100);
});

Deno.test("Pacer's even step: a group's backlog one message per window/count, another chat's one per interval", () => {
  const pacer = new Pacer();
  assert.equal(pacer.evenAt(GROUP, 0), 0, "nothing sent yet");
  pacer.sent(GROUP, 0);
  const step = TELEGRAM_LIMITS.group.windowMs / TELEGRAM_LIMITS.group.count;
  assert.equal(pacer.evenAt(GROUP, 100), step);
  pacer.sent(CHAT, 0);
  assert.equal(pacer.evenAt(CHAT, 10), TELEGRAM_LIMITS.chat.intervalMs);
  assert.equal(pacer.evenAt(CHAT, 5000), 5000);
});
