/**
 * End to end, the upgrade from release 6c90727 (the last that kept its state in files): the real
 * service started on the files that release's own code wrote (tests/fixtures/release-6c90727/,
 * their times moved to just before now) imports them at start, then carries on as if it had
 * written them: every pending message delivered exactly once, the missing backup records written
 * once, a blocked sender still held, a press on an old notification still honoured, the offset
 * kept, the waiting reply still sent, the old files gone.
 */
import assert from "node:assert/strict";
import { startFakeBotApi } from "../support/fake_bot_api.ts";
import { skipWithoutMailServer, startMailServer } from "../support/mail_server.ts";
import { assertNoTokenLeak, CHAT_ID, startService, TOKEN, waitFor } from "../support/service.ts";
import {
  BLOCKED_SENDER,
  copyFixtures,
  FIXTURE,
  OLD_SUFFIXES,
  RELEASE,
} from "../fixtures/release_6c90727.ts";

/** Texts delivered for submission `id` (its first part names it). */
function deliveriesOf(delivered: readonly string[], id: string): number {
  return delivered.filter((text) => text.includes(`#${id}`)).length;
}

/** Starts the service on a fresh copy of the fixtures; returns it, the fake and a disposer. */
async function upgraded(settings: Record<string, string> = {}) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-upgrade-e2e-" });
  // An hour after the fixtures' clock: their ages as the old service left them, an hour on.
  const messagesFile = await copyFixtures(dir, Date.now() - 3600_000);
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  // The old notification of the open entry, as the chat shows it, with its buttons.
  fake.messages.set(`${CHAT_ID}:701`, {
    text: `New contact message #${FIXTURE.open}\n\nFixture message 11`,
    replyMarkup: {
      inline_keyboard: [[
        { text: "✓ Handled", callback_data: `h:${FIXTURE.open}` },
        { text: "🚫 Spam", callback_data: `s:${FIXTURE.open}` },
      ]],
    },
  });
  const service = await startService({
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: fake.url,
    MESSAGES_FILE: messagesFile,
    ...settings,
  });
  const dispose = async () => {
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  };
  return { service, fake, messagesFile, dispose };
}

Deno.test(`e2e: upgrading from ${RELEASE.slice(0, 7)}'s files loses nothing: pending delivered once, blocks and the ledger honoured, the old files gone`, async () => {
  const { service, fake, messagesFile, dispose } = await upgraded();
  try {
    const pending = [FIXTURE.pendingRecorded, FIXTURE.pendingUnrecorded, FIXTURE.pendingFields];
    await waitFor(
      () => pending.every((id) => deliveriesOf(fake.delivered, id) === 1),
      30_000,
      "the pending messages",
    );
    const imported = service.logs().find((line) => line.event === "import_done");
    assert.ok(imported !== undefined, "import_done logged");
    assert.equal(imported.outbox, 4);

    // The old files are gone; the backup file and the database are there.
    for (const suffix of OLD_SUFFIXES) {
      await assert.rejects(() => Deno.lstat(`${messagesFile}${suffix}`), Deno.errors.NotFound);
    }
    await Deno.lstat(`${messagesFile}.db`);

    // The offset was kept for its bot: the first poll asks from it.
    await waitFor(() => fake.polls.length > 0, 15_000, "the first poll");
    assert.equal(fake.polls[0], FIXTURE.offset);

    // A press on an old notification is honoured from the imported ledger entry.
    fake.pushUpdate({
      ...fake.pressUpdate({ chatId: CHAT_ID, messageId: 701, data: `h:${FIXTURE.open}` }),
      update_id: FIXTURE.offset + 1,
    });
    await waitFor(() => fake.toasts.length === 1, 15_000, "the toast of the press");
    assert.match(fake.toasts[0]!.text, /handled/i);
    await waitFor(() => fake.edits.length === 1, 15_000, "the edit after Handled");
    assert.equal(fake.edits[0]!.messageId, 701);
    // Now handled: its one button reopens it.
    assert.deepEqual(
      fake.edits[0]!.replyMarkup?.inline_keyboard.flat().map((button) => button.callback_data),
      [`o:${FIXTURE.open}`],
    );
    assert.ok(
      service.logs().some((line) => line.event === "marked_handled" && line.id === FIXTURE.open),
    );

    // The sender the owner marked as spam before the upgrade is still held.
    const before = fake.delivered.length;
    const held = await service.post(
      { name: "Again", contact: BLOCKED_SENDER.contact, message: "Spam again" },
      BLOCKED_SENDER.ip,
    );
    assert.equal(held.status, 200, await held.text());
    // A sender nobody blocked is delivered (and shows the queue still runs).
    const fresh = await service.post(
      { contact: "new@example.org", message: "Hello" },
      "198.51.100.9",
    );
    assert.equal(fresh.status, 200, await fresh.text());
    assert.equal(fake.delivered.length, before + 1);
    assert.ok(!fake.delivered.some((text) => text.includes("Spam again")), "the held one was sent");

    // Nothing delivered twice, nothing already delivered sent again.
    for (const id of pending) assert.equal(deliveriesOf(fake.delivered, id), 1, id);
    assert.equal(deliveriesOf(fake.delivered, FIXTURE.deliveredUnrecorded), 0);
    assert.equal(deliveriesOf(fake.delivered, FIXTURE.finished), 0);

    // Every record once: the missing ones written at start (one interrupted, one delivered).
    assert.equal(await service.stop(), 0);
    const records = await service.records();
    const count = (id: string) => records.filter((record) => record.id === id).length;
    for (const id of [...pending, FIXTURE.deliveredUnrecorded, FIXTURE.finished]) {
      assert.equal(count(id), 1, `${id}: one record`);
    }
    const recovered = records.find((record) => record.id === FIXTURE.deliveredUnrecorded)!;
    assert.equal(recovered.messenger_ok, true);
    const interrupted = records.find((record) => record.id === FIXTURE.pendingUnrecorded)!;
    assert.equal(interrupted.messenger_error, "interrupted");
    assertNoTokenLeak(service);
  } finally {
    await dispose();
  }
});

Deno.test({
  name: "e2e: a reply waiting in the old replies file is still sent once after the upgrade",
  ignore: skipWithoutMailServer(),
  async fn() {
    const mail = await startMailServer();
    try {
      const { service, dispose } = await upgraded({
        SMTP_URL: `smtp://${mail.host}:${mail.port}`,
        REPLY_FROM: "site@example.org",
      });
      try {
        const [message] = await mail.waitForMessages(1, 30_000);
        assert.match(message!, /^To: .*person12@example\.org/m);
        assert.match(message!, /Thank you, a fixture reply\./);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        assert.equal((await mail.messages()).length, 1, "sent once");
        assert.equal(await service.stop(), 0);
      } finally {
        await dispose();
      }
    } finally {
      await mail.dispose();
    }
  },
});
