import assert from "node:assert/strict";
import type { SendMailOptions } from "nodemailer";
import type { LogFields } from "../../lib/log/logger.ts";
import { RETRY_BASE_MS } from "../../lib/common/retry_schedule.ts";
import {
  CLOSE_WAIT_MS,
  type ReplyOutcome,
  type ReplySender,
  startReplySender,
  TOO_OLD_REASON,
} from "../../lib/mail/reply_sender.ts";
import { type NewReply, openReplyStore, type ReplyStore } from "../../lib/mail/reply_store.ts";
import { MailSendError } from "../../lib/mail/send_error.ts";
import { fakeClock } from "../support/fake_clock.ts";
import { memoryStore } from "../support/memory_store.ts";

const MAX_AGE = 3_600_000;
const PASSWORD = "s3cret-smtp-password";

function reply(id: string, ts = "2026-11-22T14:03:09Z"): NewReply {
  return {
    id,
    submission: `s-${id}`,
    ts,
    chat: 1,
    message: 10,
    draft: {
      to: "carla@example.org",
      subject: "Re: hours",
      text: "we open at nine",
      quoted: { ts, message: "when?" },
    },
  };
}

/** A transport whose next results the test scripts: "ok" or an error to throw. */
function scriptedTransport() {
  const sent: SendMailOptions[] = [];
  const script: (Error | "ok" | Promise<void>)[] = [];
  return {
    sent,
    script,
    transport: {
      send(message: SendMailOptions): Promise<void> {
        sent.push(message);
        const next = script.shift() ?? "ok";
        if (next === "ok") return Promise.resolve();
        if (next instanceof Promise) return next;
        return Promise.reject(next);
      },
    },
  };
}

async function setup(replies: NewReply[] = [], wallStart?: number) {
  const clock = fakeClock(0, wallStart);
  const logs: LogFields[] = [];
  const log = (_: unknown, fields: LogFields) => logs.push(fields);
  const store: ReplyStore = await openReplyStore(memoryStore(), {
    now: () => new Date(clock.wallNow()),
  });
  for (const r of replies) await store.add(r);
  const { sent, script, transport } = scriptedTransport();
  const outcomes: [string, ReplyOutcome][] = [];
  let sender: ReplySender | undefined;
  const start = () =>
    sender = startReplySender({
      store,
      transport,
      settings: { from: "site@example.org" },
      clock,
      random: () => 0.5,
      maxAgeMs: MAX_AGE,
      log,
      onOutcome: (r, outcome) => outcomes.push([r.id, outcome]),
    });
  return { clock, logs, store, sent, script, outcomes, start, sender: () => sender! };
}

Deno.test("a waiting reply is sent once, recorded done, and the chat told where (masked)", async () => {
  const t = await setup([reply("r1")]);
  t.start();
  await t.clock.settle();
  assert.equal(t.sent.length, 1);
  assert.equal(t.sent[0]!.to, "carla@example.org");
  assert.deepEqual(t.outcomes, [["r1", { kind: "sent", to: "c•••@example.org" }]]);
  assert.deepEqual(t.store.pending(), []);
  assert.equal(t.store.audits()[0]!.result, "sent");
  await t.clock.advance(3_600_000);
  assert.equal(t.sent.length, 1);
  assert.deepEqual(t.logs.map((l) => l.event), ["reply_sent"]);
});

Deno.test("an unreachable server is retried with back-off; the chat hears 'waiting' once, then 'sent'", async () => {
  const t = await setup([reply("r1")]);
  const down = () => new MailSendError("unreachable", "mail server unreachable");
  t.script.push(down(), down(), down());
  t.start();
  await t.clock.settle();
  assert.equal(t.sent.length, 1);
  assert.deepEqual(t.outcomes, [["r1", { kind: "waiting", reason: "mail server unreachable" }]]);
  // random 0.5: 750 ms, then 1500 ms, then 3000 ms.
  await t.clock.advance(RETRY_BASE_MS * 0.75 - 1);
  assert.equal(t.sent.length, 1);
  await t.clock.advance(1);
  assert.equal(t.sent.length, 2);
  await t.clock.advance(1500);
  assert.equal(t.sent.length, 3);
  await t.clock.advance(3000);
  assert.equal(t.sent.length, 4);
  assert.deepEqual(t.outcomes.map(([, o]) => o.kind), ["waiting", "sent"]);
  assert.deepEqual(t.logs.map((l) => l.event), [
    "reply_retry",
    "reply_retry",
    "reply_retry",
    "reply_sent",
  ]);
  assert.equal(t.store.audits()[0]!.attempts, 4);
  await t.clock.advance(600_000);
  assert.equal(t.sent.length, 4);
});

Deno.test("a recipient refused for good (5xx) is given up at once, with its reason", async () => {
  const t = await setup([reply("r1")]);
  t.script.push(
    Object.assign(new Error("Can't send mail - all recipients were rejected"), {
      code: "EENVELOPE",
      responseCode: 550,
      command: "RCPT TO",
      response: "550 5.1.1 <carla@example.org>: no such user",
    }),
  );
  t.start();
  await t.clock.settle();
  const reason = "mail server refused the recipient (550 5.1.1)";
  assert.deepEqual(t.outcomes, [["r1", { kind: "given_up", reason }]]);
  assert.equal(t.store.audits()[0]!.reason, reason);
  await t.clock.advance(600_000);
  assert.equal(t.sent.length, 1);
  const line = JSON.stringify(t.logs);
  assert.equal(line.includes("carla"), false);
  assert.ok(t.logs.some((l) => l.event === "reply_given_up" && l.submission === "s-r1"));
});

Deno.test("a 4xx answer is retried, not given up", async () => {
  const t = await setup([reply("r1")]);
  t.script.push(
    Object.assign(new Error("busy"), { code: "EENVELOPE", responseCode: 451, command: "RCPT TO" }),
  );
  t.start();
  await t.clock.settle();
  assert.deepEqual(t.outcomes[0]![1].kind, "waiting");
  await t.clock.advance(1000);
  assert.deepEqual(t.outcomes.map(([, o]) => o.kind), ["waiting", "sent"]);
});

Deno.test("a reply not sent within DELIVERY_MAX_AGE is given up with a log line", async () => {
  const t = await setup([reply("r1")]);
  for (let i = 0; i < 100; i++) {
    t.script.push(new MailSendError("unreachable", "mail server unreachable"));
  }
  t.start();
  await t.clock.advance(MAX_AGE + 1000);
  const given = t.outcomes.find(([, o]) => o.kind === "given_up");
  assert.deepEqual(given, ["r1", { kind: "given_up", reason: TOO_OLD_REASON }]);
  assert.ok(t.logs.some((l) => l.event === "reply_given_up" && l.reason === TOO_OLD_REASON));
  const tries = t.sent.length;
  await t.clock.advance(MAX_AGE);
  assert.equal(t.sent.length, tries);
  assert.deepEqual(t.store.pending(), []);
});

Deno.test("a reply already too old at start is given up without a try", async () => {
  const t = await setup([reply("r1", "2026-11-22T10:00:00Z")]);
  t.start();
  await t.clock.settle();
  assert.equal(t.sent.length, 0);
  assert.deepEqual(t.outcomes, [["r1", { kind: "given_up", reason: TOO_OLD_REASON }]]);
});

Deno.test("replies go one at a time, in order; wake picks up a reply added later", async () => {
  const t = await setup([reply("r1"), reply("r2", "2026-11-22T14:03:10Z")]);
  let release = () => {};
  t.script.push(new Promise<void>((resolve) => (release = resolve)));
  t.start();
  await t.clock.settle();
  assert.equal(t.sent.length, 1);
  assert.equal(t.sender().state(), "sending");
  release();
  await t.clock.settle();
  assert.equal(t.sent.length, 2);
  assert.equal(t.sender().state(), "idle");
  await t.store.add(reply("r3", "2026-11-22T14:03:11Z"));
  t.sender().wake();
  await t.clock.settle();
  assert.deepEqual(t.outcomes.map(([id]) => id), ["r1", "r2", "r3"]);
});

Deno.test("close stops the retries and waits for a send under way at most its bound; a second close waits too", async () => {
  const t = await setup([reply("r1")]);
  t.script.push(new Promise<void>(() => {}));
  t.start();
  await t.clock.settle();
  let closed = false;
  let again = false;
  const closing = t.sender().close().then(() => (closed = true));
  const second = t.sender().close().then(() => (again = true));
  await t.clock.advance(CLOSE_WAIT_MS - 1);
  assert.equal(again, false, "the second close waits for the same send");
  assert.equal(closed, false);
  await t.clock.advance(1);
  await closing;
  await second;
  assert.equal(closed, true);
  assert.equal(t.sender().state(), "closed");
  await t.clock.advance(600_000);
  assert.equal(t.sent.length, 1);
});

Deno.test("after a restart a reply that failed before is tried at once and sent once", async () => {
  const t = await setup([reply("r1")]);
  await t.store.failed("r1", "2026-11-22T14:03:20Z", "mail server unreachable");
  t.start();
  await t.clock.settle();
  assert.equal(t.sent.length, 1);
  // Not its first failure: the chat heard "waiting" before the restart.
  assert.deepEqual(t.outcomes, [["r1", { kind: "sent", to: "c•••@example.org" }]]);
});

Deno.test("no log line carries the address, the text, or the SMTP password", async () => {
  const t = await setup([reply("r1")]);
  t.script.push(Object.assign(new Error(`Invalid login for user:${PASSWORD}`), {
    code: "EAUTH",
    responseCode: 535,
    response: `535 5.7.8 ${PASSWORD} rejected`,
  }));
  t.start();
  await t.clock.advance(2000);
  const text = JSON.stringify(t.logs);
  for (const secret of [PASSWORD, "carla", "we open at nine", "when?"]) {
    assert.equal(text.includes(secret), false, secret);
  }
  assert.deepEqual(t.outcomes[0], ["r1", {
    kind: "waiting",
    reason: "mail server refused the login (535 5.7.8)",
  }]);
});
