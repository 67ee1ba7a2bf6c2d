import assert from "node:assert/strict";
import { DESK_ANSWERS, replyDesk } from "../../lib/inbox/reply_desk.ts";
import type { ReplyEvent } from "../../lib/bot/updates.ts";
import type { NewReply } from "../../lib/mail/reply_store.ts";
import { findReplySource, replySourceOf } from "../../lib/mail/reply_sources.ts";
import type { Store } from "../../lib/storage/store.ts";
import { withTempStore } from "../support/temp_store.ts";

const EVENT: ReplyEvent = {
  kind: "reply",
  updateId: 7,
  chatId: -100,
  messageId: 55,
  from: { id: 1, name: "Anna" },
  text: "Thanks, see you Monday.",
  replyTo: 12,
  replyToBot: true,
};

/** The reply desk reading its submissions from `store` (never from the backup file). */
function desk(store: Store) {
  const added: NewReply[] = [];
  const answer = replyDesk({
    store: {
      add: (reply) => (added.push(reply), Promise.resolve(true)),
      pending: () => [],
      audits: () => [],
    },
    wake: () => {},
    findRecord: (id) => findReplySource(store, id),
    from: "site@bakery.example",
    formTitle: (form) => (form === "orders" ? "Orders" : undefined),
    limit: { limit: 5, windowMs: 3_600_000 },
    now: () => Date.parse("2026-11-25T18:40:00Z"),
    log: () => {},
  });
  return { added, ask: (submission: string) => answer({ event: EVENT, submission }) };
}

Deno.test("a reply's draft comes from the database: contact, quoted message, subject field, form", async () => {
  await withTempStore(async ({ store }) => {
    await store.run(
      "replySources.add",
      replySourceOf({
        id: "s1",
        ts: "2026-11-25T10:00:00Z",
        form: "orders",
        contact: "carla@example.org",
        message: "Hello there",
        fields: { subject: "Cake", phone: "+1 555" },
      }),
    );
    await store.run(
      "replySources.add",
      replySourceOf({
        id: "s2",
        ts: "2026-11-25T11:00:00Z",
        contact: "dan@example.org",
        message: "Hi",
      }),
    );
    const { added, ask } = desk(store);
    assert.equal(await ask("s1"), undefined);
    assert.equal(await ask("s2"), undefined);
    assert.deepEqual(added.map((reply) => reply.draft), [
      {
        to: "carla@example.org",
        subject: "Re: Cake",
        text: EVENT.text,
        quoted: { ts: "2026-11-25T10:00:00Z", message: "Hello there" },
      },
      {
        to: "dan@example.org",
        subject: "Re: your message to bakery.example",
        text: EVENT.text,
        quoted: { ts: "2026-11-25T11:00:00Z", message: "Hi" },
      },
    ]);
  });
});

Deno.test("a contact that is no email address keeps no message; the desk quotes the contact back", async () => {
  await withTempStore(async ({ store }) => {
    const source = replySourceOf({
      id: "s1",
      ts: "2026-11-25T10:00:00Z",
      contact: "@carla on Telegram",
      message: "private words",
    });
    assert.equal(source.message, null);
    await store.run("replySources.add", source);
    const { added, ask } = desk(store);
    assert.match(String(await ask("s1")), /only "@carla on Telegram"/);
    assert.deepEqual(added, []);
  });
});

Deno.test("retention and erasure remove a submission's reply data: the desk answers that it is gone", async () => {
  await withTempStore(async ({ store }) => {
    for (const [id, ts] of [["old", "2026-09-01T00:00:00Z"], ["erased", "2026-11-25T10:00:00Z"]]) {
      await store.run(
        "replySources.add",
        replySourceOf({ id: id!, ts: ts!, contact: "carla@example.org", message: "hi" }),
      );
    }
    assert.equal(await store.run("replySources.prune", { before: "2026-10-01T00:00:00Z" }), 1);
    assert.equal(await store.run("replySources.forget", { ids: ["erased", "unknown"] }), 1);
    const { added, ask } = desk(store);
    assert.equal(await ask("old"), DESK_ANSWERS.gone);
    assert.equal(await ask("erased"), DESK_ANSWERS.gone);
    assert.deepEqual(added, []);
  });
});
