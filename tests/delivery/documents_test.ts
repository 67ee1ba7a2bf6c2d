import assert from "node:assert/strict";
import { DocumentSender, refusedLine } from "../../lib/delivery/documents.ts";
import type { BotApiResult } from "../../lib/bot/api.ts";
import type { DocumentExtra } from "../../lib/bot/document.ts";
import type { LedgerEntry, SentPart } from "../../lib/storage/ledger.ts";
import type { FileRow, FileState } from "../../lib/storage/attachments.ts";
import { openLocalStore } from "../../lib/storage/store.ts";

const TS = "2026-11-27T10:00:00Z";
const NOW = Date.parse(TS) + 60_000;

const row = (submission: string, idx: number, ts = TS): FileRow => ({
  submission,
  idx,
  ts,
  form: null,
  name: `f${idx}.pdf`,
  size: 10,
  type: "application/pdf",
  sha256: "00".repeat(32),
  stored: `${submission}-${idx}`,
});

const entry = (id: string): LedgerEntry => ({
  id,
  ts: TS,
  chat: -100,
  buttons: [7],
  messages: [7],
  ip: "192.0.2.1",
  contact: "a@example.org",
  state: "open",
});

async function withSender(
  answers: BotApiResult[],
  test: (parts: {
    sender: DocumentSender;
    store: Awaited<ReturnType<typeof openLocalStore>>;
    sent: { file: FileState; chat: number; extra: DocumentExtra }[];
    said: string[];
    noted: SentPart[];
    entries: Map<string, LedgerEntry>;
    clock: { wall: number; mono: number };
  }) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const store = await openLocalStore(`${dir}/m.jsonl.db`, { create: true });
  const sent: { file: FileState; chat: number; extra: DocumentExtra }[] = [];
  const said: string[] = [];
  const noted: SentPart[] = [];
  const entries = new Map<string, LedgerEntry>();
  const clock = { wall: NOW, mono: 0 };
  let nextMessage = 100;
  const sender = new DocumentSender({
    store,
    ledger: {
      get: (id) => entries.get(id),
      noteSent: (part) => (noted.push(part), Promise.resolve()),
    },
    call: (_chat, fn) => fn(),
    sendFile: (file, chat, extra) => {
      sent.push({ file, chat, extra });
      return Promise.resolve(
        answers.shift() ?? { ok: true, result: { message_id: nextMessage++ } },
      );
    },
    say: (
      _chat,
      text,
    ) => (said.push(text), Promise.resolve({ ok: true, result: { message_id: 99 } })),
    topicOf: () => 5,
    maxAgeMs: 7 * 86_400_000,
    wallNow: () => clock.wall,
    now: () => clock.mono,
    setTimer: () => 0,
    clearTimer: () => {},
    random: () => 0.5,
    log: () => {},
  });
  try {
    await test({ sender, store, sent, said, noted, entries, clock });
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a file waits for its notification, then goes as a captioned reply in its chat and topic, once", async () => {
  await withSender([], async ({ sender, store, sent, noted, entries }) => {
    await store.run("files.add", { files: [row("abc", 0), row("abc", 1)] });
    assert.equal(await sender.round(), 0, "nothing before the notification reached the chat");
    assert.equal(sent.length, 0);
    entries.set("abc", entry("abc"));
    assert.equal(await sender.round(), 2);
    assert.deepEqual(sent.map((s) => [s.file.name, s.chat, s.extra]), [
      ["f0.pdf", -100, { topicId: 5, replyTo: 7, caption: "#abc" }],
      ["f1.pdf", -100, { topicId: 5, replyTo: 7, caption: "#abc" }],
    ]);
    // Noted as parts of the entry: erasure deletes them from the chat with the text.
    assert.deepEqual(noted.map((p) => [p.id, p.messageId, p.first]), [["abc", 100, false], [
      "abc",
      101,
      false,
    ]]);
    assert.equal(await sender.round(), 0, "never sent twice");
    assert.equal(await store.run("files.waitingCount", undefined), 0);
  });
});

Deno.test("a file Telegram refuses becomes a line in the chat, and a failure is tried again after a back-off", async () => {
  const refused: BotApiResult = {
    ok: false,
    error: "413 Request Entity Too Large",
    errorCode: 413,
  };
  const down: BotApiResult = { ok: false, error: "timeout" };
  await withSender([refused, down], async ({ sender, store, sent, said, entries, clock }) => {
    entries.set("abc", entry("abc"));
    await store.run("files.add", { files: [row("abc", 0), row("abc", 1)] });
    assert.equal(await sender.round(), 1);
    const [first] = await store.run("files.of", { id: "abc" });
    assert.deepEqual(said, [refusedLine(first!, "413 Request Entity Too Large")]);
    assert.equal(first!.state, "refused");
    assert.equal(await sender.round(), 0, "not before its back-off");
    assert.equal(sent.length, 2);
    clock.mono += 2000;
    assert.equal(await sender.round(), 1);
    assert.equal(sent.length, 3);
    assert.equal(await store.run("files.waitingCount", undefined), 0);
  });
});

Deno.test("a file whose notification is still in the outbox is not given up however old: a held submission released late gets its files", async () => {
  await withSender([], async ({ sender, store, sent, entries, clock }) => {
    await store.run("files.add", { files: [row("late", 0)] });
    clock.wall += 30 * 86_400_000;
    // Released from /held a month after it came: its notification is in the outbox, on its way.
    await store.run("outbox.add", { id: "late", ts: TS, submission: "{}" });
    assert.equal(await sender.round(), 0);
    assert.equal((await store.run("files.of", { id: "late" }))[0]!.state, "waiting");
    entries.set("late", entry("late"));
    assert.equal(await sender.round(), 1);
    assert.equal(sent[0]?.extra.replyTo, 7);
  });
});

Deno.test("a file whose notification was never sent is given up after DELIVERY_MAX_AGE", async () => {
  await withSender([], async ({ sender, store, sent, clock }) => {
    await store.run("files.add", { files: [row("old", 0)] });
    assert.equal(await sender.round(), 0);
    clock.wall += 8 * 86_400_000;
    assert.equal(await sender.round(), 1);
    assert.equal(sent.length, 0);
    assert.equal((await store.run("files.of", { id: "old" }))[0]!.state, "refused");
  });
});
