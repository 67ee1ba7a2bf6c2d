import assert from "node:assert/strict";
import { followUpDestination } from "../../lib/service/delivery.ts";
import { followUpLine, notificationParts } from "../../lib/bot/notification.ts";
import { parseConfig } from "../../lib/config/config.ts";

const config = parseConfig({
  MESSENGER_BOT_TOKEN: "123:abc",
  MESSENGER_CHAT_ID: "-100",
  MESSENGER_TOPIC_ID: "4",
});
const submission = {
  id: "f1",
  ts: "2026-11-27T10:00:00Z",
  name: "",
  contact: "",
  message: "more",
  ip: "192.0.2.1",
  followUp: "a1",
};
const ledger = (entry?: { chat: number; buttons: number[] }) => ({ get: () => entry });

Deno.test("a follow-up goes to its case's chat and topic as a reply to the notification's first part, naming the case", () => {
  assert.deepEqual(
    followUpDestination(config, ledger({ chat: -100, buttons: [77] }), submission),
    {
      form: "default",
      chatId: -100,
      topicId: 4,
      title: undefined,
      followUpOf: "a1",
      replyTo: 77,
    },
  );
});

Deno.test("a follow-up whose case's notification is not in the chat (yet) is still marked, replying to nothing", () => {
  const to = followUpDestination(config, ledger(undefined), submission);
  assert.equal(to?.followUpOf, "a1");
  assert.equal(to?.replyTo, undefined);
  // In another chat than the form's now: no reply across chats.
  assert.equal(
    followUpDestination(config, ledger({ chat: -200, buttons: [77] }), submission)?.replyTo,
    undefined,
  );
});

Deno.test("any other submission is no follow-up", () => {
  assert.equal(
    followUpDestination(config, ledger({ chat: -100, buttons: [77] }), {
      ...submission,
      id: "x",
      followUp: undefined,
    }),
    undefined,
  );
});

Deno.test("a follow-up's notification says under its first line which case it follows up", () => {
  const [text] = notificationParts({ ...submission, followUpOf: "a1" });
  const lines = text!.split("\n");
  assert.equal(lines[0], "New contact message #f1");
  assert.equal(lines[1], followUpLine("a1"));
  assert.match(lines[1]!, /Follow-up of #a1/);
  assert.ok(!notificationParts(submission)[0]!.includes("Follow-up"));
});
