/**
 * What the owner's presses and replies teach the learned spam filter: Spam teaches spam; Handled,
 * Not spam and a reply teach not spam; Reopen takes back what the last press taught; Not spam on
 * a notification the filter marked keeps it open; a failed lesson never fails the press; and
 * `/status` says how many examples the filter has learnt.
 */
import assert from "node:assert/strict";
import type { BotApiResult } from "../../lib/bot/api.ts";
import {
  encodeCallbackData,
  keyboardFor,
  type MessageState,
  parseReleaseData,
  releaseKeyboard,
} from "../../lib/bot/keyboard.ts";
import type { ChatAction } from "../../lib/bot/keyboard.ts";
import type { Sender } from "../../lib/bot/updates.ts";
import {
  Inbox,
  type InboxDeps,
  NO_REPLIES,
  NOT_SPAM_LEARNT,
  POSTED_TO_PAGE,
  RELEASE_TOASTS,
} from "../../lib/inbox/inbox.ts";
import { statusText } from "../../lib/inbox/status_text.ts";
import { spamMarkLine, withoutSpamMark } from "../../lib/bot/notification.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { MIN_EXAMPLES } from "../../lib/learn/classifier.ts";

const CHAT = -100123;
const MSG = 7;
const ID = "k3J9xQa1";
const OWNER: Sender = { id: 42, name: "Olga" };
const OK: BotApiResult = { ok: true, result: true };

/** `answer`: what the reply desk says to a reply (`undefined`: taken, its outcome later). */
function world(
  learnFails = false,
  answer: (text: string) => string | undefined = () => "sent",
) {
  const lessons: [string, "spam" | "ham" | null][] = [];
  const toasts: string[] = [];
  const edits: unknown[] = [];
  const texts: string[] = [];
  const logs: LogFields[] = [];
  const says: { text: string; markup: unknown }[] = [];
  const held = new Set(["hd1", "hd2"]);
  let state: MessageState = "open";
  let label: "spam" | "ham" | null = null;
  const entry = () => ({
    id: ID,
    chat: CHAT,
    buttons: [MSG],
    messages: [MSG],
    state,
    ip: "198.51.100.1",
    contact: "a@example.org",
    ts: "2026-11-25T18:00:00Z",
  });
  const deps: InboxDeps = {
    api: {
      edit: (_chat, _id, text, markup) => (
        edits.push(markup), texts.push(text ?? ""), Promise.resolve(OK)
      ),
      toast: (_q, text) => (toasts.push(text), Promise.resolve(OK)),
      say: (_chat, text, _at, markup) => (says.push({ text, markup }), Promise.resolve(OK)),
      isAdmin: () => Promise.resolve(true),
    },
    ledger: {
      get: (id) => id === ID ? entry() : undefined,
      byMessage: (chat, message) => chat === CHAT && message === MSG ? entry() : undefined,
      setState: (_id, next) => (state = next, Promise.resolve()),
    },
    blocks: { block: () => Promise.resolve(1), lift: () => Promise.resolve(0), period: "30 days" },
    chats: new Set([CHAT]),
    by: "members",
    status: () => ({
      delivery: { state: "ok" },
      pending: 0,
      oldestMs: undefined,
      replies: undefined,
    }),
    pending: () => [],
    learn: (id, next) => {
      if (learnFails) return Promise.reject(new Error("disk full"));
      lessons.push([id, next]);
      const changed = label !== next;
      label = next;
      return Promise.resolve(changed);
    },
    reply: ({ event }) => Promise.resolve(answer(event.text)),
    held: () =>
      Promise.resolve({
        items: [...held].map((id) => ({ id, ts: "2026-11-25T16:40:00Z", score: 0.973 })),
        count: held.size,
      }),
    release: (id) => Promise.resolve(held.delete(id)),
    now: () => Date.parse("2026-11-25T18:40:00Z"),
    log: (_level, fields) => void logs.push(fields),
  };
  const inbox = new Inbox(deps);
  let update = 0;
  const press = (action: ChatAction) =>
    inbox.handle({
      kind: "press",
      updateId: ++update,
      queryId: `q${update}`,
      chatId: CHAT,
      messageId: MSG,
      from: OWNER,
      data: encodeCallbackData(action, ID)!,
      text: `${spamMarkLine(0.95)}\nNew contact message #${ID}\nFrom: SEO\n\nrank first`,
    });
  const reply = (text: string) =>
    inbox.handle({
      kind: "reply",
      updateId: ++update,
      chatId: CHAT,
      messageId: 100 + update,
      from: OWNER,
      text,
      replyTo: MSG,
      replyToBot: true,
    });
  const command = (name: "held" | "status") =>
    inbox.handle({
      kind: "command",
      updateId: ++update,
      chatId: CHAT,
      messageId: 200 + update,
      from: OWNER,
      command: name,
    });
  const pressData = (data: string) =>
    inbox.handle({
      kind: "press",
      updateId: ++update,
      queryId: `q${update}`,
      chatId: CHAT,
      messageId: 300,
      from: OWNER,
      data,
    });
  return {
    inbox,
    press,
    pressData,
    reply,
    command,
    lessons,
    toasts,
    edits,
    texts,
    logs,
    says,
    held,
    state: () => state,
  };
}

Deno.test("Spam teaches spam, Not spam teaches not spam, Handled teaches not spam, Reopen takes it back", async () => {
  const w = world();
  await w.press("spam");
  await w.press("not_spam");
  await w.press("handled");
  await w.press("reopen");
  assert.deepEqual(w.lessons, [[ID, "spam"], [ID, "ham"], [ID, "ham"], [ID, null]]);
});

Deno.test("Not spam on a notification the filter marked keeps it open, teaches not spam and shows the usual buttons", async () => {
  const w = world();
  await w.press("not_spam");
  assert.equal(w.state(), "open");
  assert.deepEqual(w.lessons, [[ID, "ham"]]);
  assert.equal(w.toasts[0], NOT_SPAM_LEARNT);
  assert.deepEqual(w.edits[0], keyboardFor("open", ID));
  // Its first line, the filter's mark, is gone from the edited text.
  assert.ok(w.texts[0]!.startsWith("New contact message #"), w.texts[0]);
  // Pressed again: nothing more to learn, the usual "Already" toast.
  await w.press("not_spam");
  assert.equal(w.toasts[1], "Already open.");
});

Deno.test("a reply teaches not spam only once posted to the page or sent by email, never on a notification pressed Spam", async () => {
  // Replies off, or refused (nothing sent): nothing learnt.
  const off = world(false, () => NO_REPLIES);
  await off.reply("Thanks, I'll call you");
  assert.deepEqual(off.lessons, []);
  // Taken by email: nothing yet; the reply sender's "sent" teaches it.
  const mailed = world(false, () => undefined);
  await mailed.reply("Thanks, I'll call you");
  assert.deepEqual(mailed.lessons, []);
  await mailed.inbox.replySent(ID);
  assert.deepEqual(mailed.lessons, [[ID, "ham"]]);
  // Posted to the sender's page: learnt at once; a sticker (not posted) teaches nothing.
  const page = world(false, (text) => text === "" ? "Only a text reply…" : POSTED_TO_PAGE);
  await page.reply("");
  assert.deepEqual(page.lessons, []);
  await page.reply("Thanks, I'll call you");
  assert.deepEqual(page.lessons, [[ID, "ham"]]);
  // Pressed Spam: a reply posted or sent afterwards never takes that back.
  const spam = world(false, () => POSTED_TO_PAGE);
  await spam.press("spam");
  await spam.reply("Stop writing to me");
  await spam.inbox.replySent(ID);
  assert.deepEqual(spam.lessons, [[ID, "spam"]]);
});

Deno.test("a lesson that cannot be written is logged spam_teach_failed and the press still counts", async () => {
  const w = world(true);
  await w.press("spam");
  assert.equal(w.state(), "spam");
  assert.ok(w.logs.some((fields) => fields.event === "spam_teach_failed" && fields.id === ID));
});

Deno.test("the marked keyboard offers Not spam and Spam; once acted on, the usual ones", () => {
  const texts = (state: MessageState, marked: boolean) =>
    keyboardFor(state, ID, marked).inline_keyboard[0]!.map((button) => button.text);
  assert.deepEqual(texts("open", true), ["✅ Not spam", "🚫 Spam"]);
  assert.deepEqual(texts("open", false), ["✓ Handled", "🚫 Spam"]);
  assert.deepEqual(texts("spam", true), texts("spam", false));
});

Deno.test("/status says how many examples the spam filter has learnt, and whether it scores yet", () => {
  const base = {
    delivery: { state: "ok" as const },
    pending: 0,
    oldestMs: undefined,
    replies: undefined,
  };
  const learning = statusText({ ...base, spamFilter: { spam: 3, ham: 5, ready: false } });
  assert.match(learning, /Spam filter: learnt from 3 spam and 5 other submissions/);
  assert.match(learning, new RegExp(`scores from ${MIN_EXAMPLES.spam} and ${MIN_EXAMPLES.ham} on`));
  const scoring = statusText({ ...base, spamFilter: { spam: 30, ham: 50, ready: true } });
  assert.match(scoring, /learnt from 30 spam and 50 other submissions, scoring each new one/);
  assert.ok(!statusText(base).includes("Spam filter"), "SPAM_FILTER=off: no line");
});

Deno.test("/held lists what the filter held (ids, ages, scores) with a release button each; a release press sends it once", async () => {
  const w = world();
  await w.command("held");
  assert.equal(
    w.says[0]!.text,
    "Held as spam (2); a button below sends one to this chat:\n#hd1 · 2 h · 97 %\n#hd2 · 2 h · 97 %",
  );
  assert.deepEqual(w.says[0]!.markup, releaseKeyboard(["hd1", "hd2"]));
  const data = releaseKeyboard(["hd1"]).inline_keyboard[0]![0]!.callback_data;
  assert.equal(parseReleaseData(data), "hd1");
  await w.pressData(data);
  assert.equal(w.toasts[0], RELEASE_TOASTS.released);
  assert.ok(!w.held.has("hd1"));
  await w.pressData(data);
  assert.equal(w.toasts[1], RELEASE_TOASTS.gone);
  // Nothing held: said so, no buttons.
  w.held.clear();
  await w.command("held");
  assert.equal(w.says[1]!.text, "Nothing is held as spam.");
  assert.equal(w.says[1]!.markup, undefined);
});

Deno.test("the spam mark goes only from a notification's own first line, never from a sender's text", () => {
  const marked = `${spamMarkLine(0.93)}\nNew contact message #a1\nFrom: x`;
  assert.equal(withoutSpamMark(marked), "New contact message #a1\nFrom: x");
  const forged = `${spamMarkLine(0.93)}\nsomething else`;
  assert.equal(withoutSpamMark(forged), forged);
  assert.equal(withoutSpamMark("New contact message #a1"), "New contact message #a1");
});
