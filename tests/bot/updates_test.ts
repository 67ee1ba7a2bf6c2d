import assert from "node:assert/strict";
import { ALLOWED_UPDATES, nextOffset, parseUpdates } from "../../lib/bot/updates.ts";

const GROUP = -1001234567890;
const ANN = { id: 42, is_bot: false, first_name: "Ann", last_name: "Lee", username: "ann" };

function message(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    message_id: 70,
    date: 1_790_000_000,
    chat: { id: GROUP, type: "supergroup" },
    from: ANN,
    ...fields,
  };
}

Deno.test("contactd asks for messages and button presses only", () => {
  assert.deepEqual(ALLOWED_UPDATES, ["message", "callback_query"]);
});

Deno.test("a button press carries the query, the chat, the message, the presser, the data and the text", () => {
  const events = parseUpdates([{
    update_id: 900,
    callback_query: {
      id: "4382bfdwdsb323b2d9",
      from: ANN,
      message: message({ message_id: 12, text: "New contact message #k3x9q2ab" }),
      chat_instance: "x",
      data: "h:k3x9q2ab",
    },
  }]);
  assert.deepEqual(events, [{
    kind: "press",
    updateId: 900,
    queryId: "4382bfdwdsb323b2d9",
    chatId: GROUP,
    messageId: 12,
    from: { id: 42, name: "Ann Lee" },
    data: "h:k3x9q2ab",
    text: "New contact message #k3x9q2ab",
  }]);
});

Deno.test("a press on an inaccessible message (date 0) has no text; one without data has empty data", () => {
  const [event] = parseUpdates([{
    update_id: 1,
    callback_query: {
      id: "q",
      from: ANN,
      message: { message_id: 12, date: 0, chat: { id: GROUP, type: "supergroup" } },
    },
  }]);
  assert.equal(event?.kind, "press");
  assert.ok(event?.kind === "press" && event.data === "" && !("text" in event));
});

Deno.test("a press without a message (inline mode) or without a presser is other", () => {
  assert.deepEqual(
    parseUpdates([
      { update_id: 1, callback_query: { id: "q", from: ANN, inline_message_id: "x", data: "h:a" } },
      { update_id: 2, callback_query: { id: "q", message: message({}), data: "h:a" } },
    ]),
    [{ kind: "other", updateId: 1 }, { kind: "other", updateId: 2 }],
  );
});

Deno.test("/status and /pending are commands, in any case, bare or addressed to this bot only", () => {
  const texts = [
    "/status",
    "/pending",
    "/STATUS now",
    "/status@Contactd_Bot",
    "/pending@contactd_bot x",
  ];
  const events = parseUpdates(
    texts.map((text, i) => ({ update_id: i, message: message({ text }) })),
    "contactd_bot",
  );
  assert.deepEqual(events.map((event) => event.kind === "command" ? event.command : event.kind), [
    "status",
    "pending",
    "status",
    "status",
    "pending",
  ]);
  assert.deepEqual(events[0], {
    kind: "command",
    updateId: 0,
    chatId: GROUP,
    messageId: 70,
    from: { id: 42, name: "Ann Lee" },
    command: "status",
  });
});

Deno.test("a command for another bot, an unknown command or a lookalike is other", () => {
  const texts = ["/status@other_bot", "/start", "/statusx", "/pendingfoo", "status", "/ status"];
  const events = parseUpdates(
    texts.map((text, i) => ({ update_id: i, message: message({ text }) })),
    "contactd_bot",
  );
  assert.deepEqual(events.map((event) => event.kind), texts.map(() => "other"));
  // Without the bot's username, an addressed command cannot be known to be ours.
  assert.equal(
    parseUpdates([{ update_id: 1, message: message({ text: "/status@contactd_bot" }) }])[0]?.kind,
    "other",
  );
});

Deno.test("a command in a forum topic names the topic to answer in", () => {
  const [event] = parseUpdates([{
    update_id: 5,
    message: message({ text: "/pending", message_thread_id: 9, is_topic_message: true }),
  }]);
  assert.ok(event?.kind === "command" && event.topicId === 9);
});

Deno.test("a reply carries its text and the id of the message it answers", () => {
  const events = parseUpdates([{
    update_id: 7,
    message: message({
      message_id: 71,
      text: "Thanks, we'll call you.",
      reply_to_message: message({ message_id: 12, text: "New contact message" }),
    }),
  }]);
  assert.deepEqual(events, [{
    kind: "reply",
    updateId: 7,
    chatId: GROUP,
    messageId: 71,
    from: { id: 42, name: "Ann Lee" },
    text: "Thanks, we'll call you.",
    replyTo: 12,
    replyToBot: false,
  }]);
});

Deno.test("a reply without text (a photo) is a reply with empty text, so it can be answered", () => {
  const [event] = parseUpdates([{
    update_id: 7,
    message: message({
      photo: [{}],
      caption: "look",
      reply_to_message: message({ message_id: 12 }),
    }),
  }]);
  assert.ok(event?.kind === "reply" && event.text === "" && event.replyTo === 12);
});

Deno.test("a topic message's implicit reply to the topic's first message is not a reply", () => {
  const events = parseUpdates([
    {
      update_id: 1,
      message: message({
        text: "hello",
        message_thread_id: 3,
        is_topic_message: true,
        reply_to_message: message({ message_id: 3, forum_topic_created: { name: "Forms" } }),
      }),
    },
    {
      update_id: 2,
      message: message({
        text: "hello",
        message_thread_id: 3,
        is_topic_message: true,
        reply_to_message: message({ message_id: 3 }),
      }),
    },
  ]);
  assert.deepEqual(events.map((event) => event.kind), ["other", "other"]);
});

Deno.test("a reply that starts with a slash but no command is still a reply; another bot's message is not", () => {
  const events = parseUpdates([
    {
      update_id: 1,
      message: message({ text: "/etc/hosts is fine", reply_to_message: { message_id: 12 } }),
    },
    {
      update_id: 2,
      message: message({
        from: { id: 9, is_bot: true, first_name: "B" },
        text: "x",
        reply_to_message: { message_id: 12 },
      }),
    },
    { update_id: 3, message: message({ text: "plain text, no reply" }) },
  ]);
  assert.deepEqual(events.map((event) => event.kind), ["reply", "other", "other"]);
});

Deno.test("a name is first and last name, else @username, else the id; one line, at most 64 code points", () => {
  const names = parseUpdates([
    { update_id: 1, message: message({ text: "/status", from: { id: 5, first_name: "Zoë" } }) },
    {
      update_id: 2,
      message: message({ text: "/status", from: { id: 5, first_name: "", username: "zo" } }),
    },
    { update_id: 3, message: message({ text: "/status", from: { id: 5 } }) },
    {
      update_id: 4,
      message: message({
        text: "/status",
        from: { id: 5, first_name: "Eve\n\u001b[31m\u202eX\u0000", last_name: "😀".repeat(100) },
      }),
    },
  ]).map((event) => event.kind === "command" ? event.from.name : "");
  assert.deepEqual(names.slice(0, 3), ["Zoë", "@zo", "5"]);
  const hostile = names[3]!;
  assert.ok(!/[\p{Cc}\u202e\n]/u.test(hostile), JSON.stringify(hostile));
  assert.equal([...hostile].length, 64);
  assert.ok(hostile.startsWith("Eve [31mX 😀"));
});

Deno.test("hostile updates are other or skipped, never an exception", () => {
  const junk: unknown[] = [
    null,
    7,
    "x",
    [],
    { update_id: "1" },
    { update_id: 1e300 },
    { update_id: -1 },
    { update_id: 1.5 },
    { update_id: 10, message: null },
    { update_id: 11, message: { chat: { id: "1" }, message_id: 1, from: ANN, text: "/status" } },
    { update_id: 12, message: message({ message_id: 2 ** 60, text: "/status" }) },
    { update_id: 13, message: message({ chat: { id: 1e300 }, text: "/status" }) },
    { update_id: 14, message: message({ text: "/status", from: { id: -5, first_name: "x" } }) },
    { update_id: 15, message: message({ text: 42, reply_to_message: { message_id: "12" } }) },
    { update_id: 16, callback_query: { id: 5, from: ANN, message: message({}), data: "h:a" } },
    { update_id: 17, callback_query: { id: "q", from: ANN, message: message({}), data: 7 } },
    { update_id: 18, callback_query: { id: "q".repeat(10_000), from: ANN, message: message({}) } },
    { update_id: 19, edited_message: message({ text: "/status" }) },
    { update_id: 20, message: message({ text: "/status" }), callback_query: "x" },
  ];
  const events = parseUpdates(junk, "contactd_bot");
  assert.deepEqual(
    events.filter((event) => event.kind !== "other"),
    [{
      kind: "command",
      updateId: 20,
      chatId: GROUP,
      messageId: 70,
      from: { id: 42, name: "Ann Lee" },
      command: "status",
    }],
  );
  assert.deepEqual(events.map((event) => event.updateId), [
    10,
    11,
    12,
    13,
    14,
    15,
    16,
    17,
    18,
    19,
    20,
  ]);
  assert.deepEqual(parseUpdates({ not: "an array" }), []);
  assert.deepEqual(parseUpdates(undefined), []);
});

Deno.test("the next offset is one past the highest update id, junk updates included, and never goes back", () => {
  assert.equal(
    nextOffset([{ update_id: 5 }, "junk", { update_id: 9, message: 1 }, { update_id: 7 }], 3),
    10,
  );
  assert.equal(nextOffset([{ update_id: 5 }], 20), 20);
  assert.equal(nextOffset([], 20), 20);
  assert.equal(nextOffset([], undefined), undefined);
  assert.equal(nextOffset([{ update_id: 1e300 }, { update_id: "9" }], undefined), undefined);
  assert.equal(nextOffset({ result: [] }, 4), 4);
});
