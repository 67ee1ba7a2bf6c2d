import assert from "node:assert/strict";
import { DESK_ANSWERS, outcomeText, replyDesk } from "../../lib/inbox/reply_desk.ts";
import type { NewReply } from "../../lib/mail/reply_store.ts";
import type { ReplyEvent } from "../../lib/bot/updates.ts";
import { parseRecordLine, type StoredRecord } from "../../lib/storage/records.ts";
import type { LogFields } from "../../lib/log/logger.ts";

const NOW = Date.parse("2026-11-25T18:40:00Z");

/** A backup record, read back as the backup file's reader reads it. */
function record(value: Record<string, unknown>): StoredRecord {
  const full = { ts: "2026-11-25T10:00:00Z", id: "s1", message: "Hello there", ...value };
  return parseRecordLine(JSON.stringify(full))!;
}

function event(text = "Thanks, see you Monday."): ReplyEvent {
  return {
    kind: "reply",
    updateId: 7,
    chatId: -100,
    messageId: 55,
    from: { id: 1, name: "Anna" },
    text,
    replyTo: 12,
    replyToBot: true,
  };
}

/** A desk over an in-memory store; `found` is the backup record, `accepted` earlier replies' ts. */
function setup(found: StoredRecord | undefined, options: {
  accepted?: string[];
  add?: (reply: NewReply) => Promise<boolean>;
  findRecord?: () => Promise<StoredRecord | undefined>;
} = {}) {
  const added: NewReply[] = [];
  const lines: LogFields[] = [];
  let woken = 0;
  const desk = replyDesk({
    store: {
      add: options.add ?? ((reply) => (added.push(reply), Promise.resolve(true))),
      pending: () => [],
      audits: () =>
        (options.accepted ?? []).map((ts, i) => ({
          id: `r${i}`,
          submission: "s0",
          ts,
          to: "x•••@example.org",
          result: "sent" as const,
          done: ts,
          attempts: 1,
        })),
    },
    wake: () => void woken++,
    findRecord: options.findRecord ?? (() => Promise.resolve(found)),
    from: "site@bakery.example",
    formTitle: (form) => (form === "orders" ? "Orders" : undefined),
    limit: { limit: 2, windowMs: 3_600_000 },
    now: () => NOW,
    log: (_level, fields) => void lines.push(fields),
  });
  return { desk, added, lines, woken: () => woken };
}

Deno.test("a reply to a submission with an email contact is saved, then the sender is woken; no answer yet", async () => {
  const s = setup(
    record({ contact: "carla@example.org", form: "orders", fields: { subject: "Cake" } }),
  );
  assert.equal(await s.desk({ event: event(), submission: "s1" }), undefined);
  assert.equal(s.added.length, 1);
  const reply = s.added[0]!;
  assert.equal(reply.id, "-100:55");
  assert.equal(reply.chat, -100);
  assert.equal(reply.message, 55);
  assert.deepEqual(reply.draft, {
    to: "carla@example.org",
    subject: "Re: Cake",
    text: "Thanks, see you Monday.",
    quoted: { ts: "2026-11-25T10:00:00Z", message: "Hello there" },
  });
  assert.equal(s.woken(), 1);
  assert.deepEqual(s.lines, [{ event: "reply_accepted", reply: "-100:55", submission: "s1" }]);
});

Deno.test("without a subject field the subject names the form's title, else REPLY_FROM's domain", async () => {
  const titled = setup(record({ contact: "c@example.org", form: "orders" }));
  await titled.desk({ event: event(), submission: "s1" });
  assert.equal(titled.added[0]!.draft.subject, "Re: your message to Orders");
  const plain = setup(record({ contact: "c@example.org" }));
  await plain.desk({ event: event(), submission: "s1" });
  assert.equal(plain.added[0]!.draft.subject, "Re: your message to bakery.example");
});

Deno.test("nothing is saved or sent, and one answer says why: no text, record gone, no contact, not an email", async () => {
  const cases: Array<[StoredRecord | undefined, string, string | RegExp]> = [
    [record({ contact: "c@example.org" }), "", DESK_ANSWERS.noText],
    [undefined, "hi", DESK_ANSWERS.gone],
    [record({ contact: "" }), "hi", DESK_ANSWERS.noContact],
    [record({ contact: "+49 30 1234567" }), "hi", /only "\+49 30 1234567": nothing was sent/],
    [record({ contact: "@carla_r" }), "hi", /only "@carla_r"/],
    [record({ contact: "c@example.org\r\nBcc: x@evil.example" }), "hi", /only "c@example.org Bcc/],
  ];
  for (const [found, text, answer] of cases) {
    const s = setup(found);
    const said = await s.desk({ event: event(text), submission: "s1" });
    if (typeof answer === "string") assert.equal(said, answer);
    else assert.match(said ?? "", answer);
    assert.equal(s.added.length, 0);
    assert.equal(s.woken(), 0);
    assert.equal(s.lines[0]?.event, "reply_refused");
    assert.ok(!JSON.stringify(s.lines).includes("@"), "no contact in the log");
  }
});

Deno.test("REPLY_LIMIT refuses a reply over it at once, saying when to try again", async () => {
  const s = setup(record({ contact: "c@example.org" }), {
    accepted: ["2026-11-25T18:00:00Z", "2026-11-25T18:30:00Z"],
  });
  const said = await s.desk({ event: event(), submission: "s1" });
  assert.match(
    said ?? "",
    /^Not sent: at most 2 replies by email per 1 h \(REPLY_LIMIT\); try again in 20 min\.$/,
  );
  assert.equal(s.added.length, 0);
});

Deno.test("a reply taken before (a redelivered update) is not saved twice nor answered again; one that cannot be saved is refused", async () => {
  const again = setup(record({ contact: "c@example.org" }), { add: () => Promise.resolve(false) });
  assert.equal(await again.desk({ event: event(), submission: "s1" }), undefined);
  assert.equal(again.woken(), 0);
  const failing = setup(record({ contact: "c@example.org" }), {
    add: () => Promise.reject(new Error("disk full")),
  });
  assert.equal(await failing.desk({ event: event(), submission: "s1" }), DESK_ANSWERS.notSaved);
  assert.equal(failing.woken(), 0);
  assert.equal(failing.lines[0]?.event, "reply_store_failed");
});

Deno.test("each outcome is one short line on the owner's reply", () => {
  assert.equal(
    outcomeText({ kind: "sent", to: "c•••@example.org" }),
    "✉️ Sent to c•••@example.org",
  );
  assert.match(
    outcomeText({ kind: "waiting", reason: "mail server unreachable" }),
    /^⏳ Waiting: mail server unreachable/,
  );
  assert.match(outcomeText({ kind: "given_up", reason: "refused" }), /^✖️ Given up: refused$/);
});

Deno.test("a reply whose submission cannot be read (a full disk) is answered not sent, reply again, and logged reply_read_failed", async () => {
  const s = setup(undefined, {
    findRecord: () => Promise.reject(new Error("disk I/O error")),
  });
  assert.equal(await s.desk({ event: event(), submission: "s1" }), DESK_ANSWERS.notSaved);
  assert.equal(s.added.length, 0);
  assert.equal(s.woken(), 0);
  assert.deepEqual(s.lines.map((line) => line.event), ["reply_read_failed"]);
});
