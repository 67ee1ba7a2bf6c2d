/**
 * Operator commands (`check`, `chat-id`, `send-test`) through `runCli`, against the fake Bot API.
 */
import assert from "node:assert/strict";
import { type CliIo, runCli } from "../../lib/cli/cli.ts";
import { addWaiting } from "./_pending_db.ts";
import { lockFiles, lockHolder } from "../../lib/storage/lock.ts";
import { withTempStore } from "../support/temp_store.ts";
import type { Settings } from "../../lib/config/settings.ts";
import {
  apiError,
  chatMigrated,
  type FakeBotApi,
  startFakeBotApi,
} from "../support/fake_bot_api.ts";

const TOKEN = "424242:AAE_secret-token-value";
const CHAT_ID = -1001234567890;

interface Outcome {
  readonly code: number;
  readonly out: string[];
  readonly err: string[];
}

/** Runs `contactd <args>` against a fresh fake with `env` as the process environment. */
async function contactd(
  args: string[],
  env: Settings = {},
  prepare: (fake: FakeBotApi) => void = () => {},
  overrides: Partial<CliIo> = {},
): Promise<Outcome & { fake: FakeBotApi }> {
  const fake = startFakeBotApi({
    token: TOKEN,
    chatId: CHAT_ID,
    botUsername: "contact_bot",
    scriptGetMe: true,
  });
  prepare(fake);
  const out: string[] = [];
  const err: string[] = [];
  const settings: Settings = {
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: fake.url,
    ...env,
  };
  try {
    const code = await runCli(args, {
      version: "9.9.9",
      env: (name) => settings[name],
      readTextFile: () => Promise.reject(new Deno.errors.NotFound("no file")),
      fetch,
      now: () => new Date("2026-11-22T14:03:09Z"),
      granted: () => true,
      out: (line) => out.push(line),
      err: (line) => err.push(line),
      serve: () => Promise.reject(new Error("serve must not run")),
      // No service holds the files (never the checkout's own lock file).
      serviceHolding: () => Promise.resolve(undefined),
      ...overrides,
    });
    for (const line of [...out, ...err]) {
      assert.ok(!line.includes("AAE_secret"), `token printed: ${line}`);
    }
    return { code, out, err, fake };
  } finally {
    await fake.close();
  }
}

Deno.test("check reports the bot's username and the chat, and exits 0", async () => {
  const { code, out, err, fake } = await contactd(["check"]);
  assert.equal(code, 0, err.join("\n"));
  assert.deepEqual(fake.calls.map((call) => call.method), ["getMe", "getChat"]);
  assert.equal(fake.calls[1]!.body.chat_id, CHAT_ID);
  assert.ok(out.includes("bot: @contact_bot (id 424242)"));
  assert.ok(out.includes(`chat: ${CHAT_ID}, supergroup, contactd test group`));
  assert.equal(out.at(-1), "ok: ready to deliver");
  assert.deepEqual(err, []);
});

Deno.test("check shows the spam challenge and how many messages wait in the database", async () => {
  await withTempStore(async ({ messagesFile, store }) => {
    await addWaiting(store, "aaaa1111", "2026-11-20T10:00:00Z", { failures: ["timeout"] });
    await addWaiting(store, "bbbb2222", "2026-11-21T10:00:00Z", { failures: ["timeout"] });
    await addWaiting(store, "cccc3333", "2026-11-21T11:00:00Z", { status: 200 });
    await store.run("outbox.done", { id: "cccc3333", result: "delivered" });
    const { code, out, err } = await contactd(["check"], {
      CHALLENGE: "altcha",
      CHALLENGE_SECRET: "k".repeat(44),
      MESSAGES_FILE: messagesFile,
    });
    assert.equal(code, 0, err.join("\n"));
    assert.ok(out.includes("challenge: altcha"), out.join("\n"));
    assert.ok(
      out.includes(
        "pending: 2 messages waiting, oldest 2026-11-20T10:00:00Z (contactd pending lists them)",
      ),
      out.join("\n"),
    );
  });
  const dir = await Deno.makeTempDir({ prefix: "contactd-check-" });
  try {
    const empty = await contactd(["check"], { MESSAGES_FILE: `${dir}/messages.jsonl` });
    assert.ok(empty.out.includes("challenge: none"));
    assert.ok(empty.out.includes("pending: 0 messages waiting"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("check exits 1 with one line when the token is refused", async () => {
  const { code, err } = await contactd(["check"], {}, (fake) => {
    fake.script.push(apiError(401, "Unauthorized"));
  });
  assert.equal(code, 1);
  assert.deepEqual(err, [
    "contactd check: getMe failed: 401 Unauthorized (wrong or revoked token: ask @BotFather)",
  ]);
});

Deno.test("check exits 1 when the chat is unknown to the bot, with the hint to message it", async () => {
  const { code, err } = await contactd(["check"], { MESSENGER_CHAT_ID: "777" });
  assert.equal(code, 1);
  assert.equal(err.length, 1);
  assert.match(
    err[0]!,
    /^contactd check: chat 777 is not reachable: 400 Bad Request: chat not found/,
  );
  assert.match(err[0]!, /message the bot from that chat first/);
});

Deno.test("check names the new id of a group that became a supergroup", async () => {
  const { code, err } = await contactd(["check"], { MESSENGER_CHAT_ID: "-4242" }, (fake) => {
    fake.script.push({ status: 200, body: { ok: true, result: { id: 1, username: "b" } } });
    fake.script.push(chatMigrated(-1009999));
  });
  assert.equal(code, 1);
  assert.deepEqual(err, [
    "contactd check: chat -4242 became a supergroup: set MESSENGER_CHAT_ID=-1009999",
  ]);
});

Deno.test("check refuses the bot's own id as the chat", async () => {
  const { code, err } = await contactd(["check"], { MESSENGER_CHAT_ID: "424242" });
  assert.equal(code, 1);
  assert.match(err[0]!, /chat 424242 is the bot itself/);
});

Deno.test("check exits 1 without calling the API when a setting is missing or malformed", async () => {
  for (
    const [env, reason] of [
      [{ MESSENGER_BOT_TOKEN: "" }, `"MESSENGER_BOT_TOKEN" is not set`],
      [{ MESSENGER_BOT_TOKEN: "not a token" }, `"MESSENGER_BOT_TOKEN" must look like`],
      [{ PORT: "70000" }, `"PORT" must be a port number between 1 and 65535`],
    ] as const
  ) {
    const { code, err, fake } = await contactd(["check"], env);
    assert.equal(code, 1);
    assert.equal(err.length, 1);
    assert.ok(err[0]!.startsWith(`contactd check: ${reason}`), err[0]);
    assert.equal(fake.calls.length, 0);
  }
});

Deno.test("check says when a setting is outside the binary's baked-in permissions", async () => {
  const { code, err, fake } = await contactd(["check"], { PORT: "9999" }, () => {}, {
    granted: (permission) => !(permission.name === "net" && permission.host.endsWith(":9999")),
  });
  assert.equal(code, 1);
  assert.match(
    err[0]!,
    /^contactd check: "HOST"\/"PORT": this build may not listen on 127\.0\.0\.1:9999/,
  );
  assert.equal(fake.calls.length, 0);
});

Deno.test("check reports a missing chat id with the command that finds it", async () => {
  const { code, out, err } = await contactd(["check"], { MESSENGER_CHAT_ID: "" });
  assert.equal(code, 1);
  assert.ok(out.includes("bot: @contact_bot (id 424242)"));
  assert.deepEqual(err, [
    `contactd check: "MESSENGER_CHAT_ID" is not set (contactd chat-id lists candidates)`,
  ]);
});

Deno.test("chat-id lists every chat that wrote to the bot, once, without consuming updates", async () => {
  const { code, out, fake } = await contactd(["chat-id"], { MESSENGER_CHAT_ID: "" }, (fake) => {
    fake.updates = [
      { update_id: 1, message: { chat: { id: 111, type: "private", username: "ann" } } },
      { update_id: 2, message: { chat: { id: 111, type: "private", username: "ann" } } },
      { update_id: 3, my_chat_member: { chat: { id: -222, type: "group", title: "Team" } } },
      { update_id: 4, channel_post: { chat: { id: -1003, type: "channel", title: "News" } } },
      { update_id: 5, callback_query: { message: { chat: { id: 444, type: "private" } } } },
      {
        update_id: 6,
        message: { chat: { id: -222, type: "group", title: "Team" }, migrate_to_chat_id: -1005 },
      },
    ];
  });
  assert.equal(code, 0);
  assert.equal(fake.calls[0]!.method, "getUpdates");
  assert.equal(fake.calls[0]!.body.offset, undefined);
  assert.deepEqual(out, [
    "id\ttype\tname",
    "111\tprivate\t@ann",
    "-222\tgroup\tTeam",
    "-1003\tchannel\tNews",
    "444\tprivate\t-",
    "note: group -222 became supergroup -1005; use -1005",
  ]);
});

Deno.test("chat-id strips terminal escapes and line breaks from names strangers chose", async () => {
  const { out } = await contactd(["chat-id"], {}, (fake) => {
    const title = "Evil\u001b]0;pwned\u0007\nid\t\u202eX" + "y".repeat(100);
    fake.updates = [{ update_id: 1, message: { chat: { id: -5, type: "group", title } } }];
  });
  const line = out[1]!;
  assert.ok(!/[\p{Cc}\u202e]/u.test(line.replaceAll("\t", "")), JSON.stringify(line));
  assert.equal(line.split("\t").length, 3);
  assert.ok(line.endsWith("…"));
});

Deno.test("chat-id with no updates says to message the bot first, exit 1", async () => {
  const { code, out, err } = await contactd(["chat-id"]);
  assert.equal(code, 1);
  assert.deepEqual(out, []);
  assert.equal(err.length, 1);
  assert.match(
    err[0]!,
    /^contactd chat-id: no chat has written to the bot yet: message the bot first/,
  );
});

Deno.test("chat-id while the service runs (it holds the lock and reads the updates) says so and to stop it first, not to message the bot", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-chat-id-" });
  const file = `${dir}/messages.jsonl`;
  const lock = await lockFiles(file, 4242);
  try {
    // The real lock file, found by lib/storage/lock.ts as the command does by default.
    const { code, out, err } = await contactd(["chat-id"], { MESSAGES_FILE: file }, () => {}, {
      serviceHolding: (messagesFile) => lockHolder(messagesFile),
    });
    assert.equal(code, 1);
    assert.deepEqual(out, []);
    assert.equal(err.length, 1);
    assert.match(
      err[0]!,
      /^contactd chat-id: no chat to list: the running contactd \(process 4242\) reads the bot's updates itself \(CHAT_ACTIONS\), so none are left for chat-id: stop it, message the bot/,
    );
    assert.doesNotMatch(err[0]!, /no chat has written to the bot yet/);
    // With chat actions off the service reads no update: the usual advice.
    const off = await contactd(["chat-id"], { MESSAGES_FILE: file, CHAT_ACTIONS: "0" }, () => {}, {
      serviceHolding: (messagesFile) => lockHolder(messagesFile),
    });
    assert.match(off.err[0]!, /no chat has written to the bot yet/);
  } finally {
    lock.release();
  }
  // Released, the service is not running: the usual advice again.
  const stopped = await contactd(["chat-id"], { MESSAGES_FILE: file }, () => {}, {
    serviceHolding: (messagesFile) => lockHolder(messagesFile),
  });
  assert.match(stopped.err[0]!, /no chat has written to the bot yet/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("chat-id explains a 409 from another getUpdates poller: a running contactd reads them", async () => {
  const { code, err } = await contactd(["chat-id"], {}, (fake) => {
    fake.conflict = "poller";
  });
  assert.equal(code, 1);
  assert.match(
    err[0]!,
    /^contactd chat-id: getUpdates failed: 409 .*another process, likely a running contactd reads the bot's updates itself/,
  );
});

Deno.test("chat-id explains a 409 from getUpdates: the webhook must go (deleteWebhook) for getUpdates to work", async () => {
  const { code, err } = await contactd(["chat-id"], {}, (fake) => {
    fake.script.push(
      apiError(409, "Conflict: can't use getUpdates method while webhook is active"),
    );
  });
  assert.equal(code, 1);
  assert.equal(err.length, 1);
  assert.match(err[0]!, /^contactd chat-id: getUpdates failed: 409 Conflict/);
  assert.match(err[0]!, /getUpdates works only without one: remove it with .*deleteWebhook/);
  assert.doesNotMatch(err[0]!, /getUpdates works without\)/);
});

Deno.test("chat-id with a refused token gives the same hint as check", async () => {
  const { code, err } = await contactd(["chat-id"], {}, (fake) => {
    fake.script.push(apiError(401, "Unauthorized"));
  });
  assert.equal(code, 1);
  assert.deepEqual(err, [
    "contactd chat-id: getUpdates failed: 401 Unauthorized (wrong or revoked token: ask @BotFather)",
  ]);
});

Deno.test("send-test delivers one plain-text notification to the configured chat", async () => {
  const { code, out, fake } = await contactd(["send-test"]);
  assert.equal(code, 0);
  assert.equal(fake.calls.length, 1);
  assert.equal(fake.calls[0]!.body.chat_id, CHAT_ID);
  assert.match(fake.delivered[0]!, /^contactd test notification\nTime: 2026-11-22T14:03:09Z\n/);
  assert.deepEqual(out, [`sent: test notification delivered to chat ${CHAT_ID}`]);
});

Deno.test("send-test reports a refused notification in one line, exit 1", async () => {
  const { code, out, err } = await contactd(["send-test"], { MESSENGER_CHAT_ID: "5" });
  assert.equal(code, 1);
  assert.deepEqual(out, []);
  assert.deepEqual(err, ["contactd send-test: not delivered: 400 Bad Request: chat not found"]);
});

Deno.test("send-test reports an unreachable API without the token", async () => {
  const { code, err } = await contactd(["send-test"], {
    MESSENGER_API_URL: "http://127.0.0.1:9",
    MESSENGER_TIMEOUT_MS: "2000",
  });
  assert.equal(code, 1);
  assert.match(err[0]!, /^contactd send-test: not delivered: (network error|timeout)/);
});

Deno.test("check with MESSENGER_TOPIC_ID names the topic of a forum chat, and fails for a chat without topics", async () => {
  const forum = await contactd(
    ["check"],
    { MESSENGER_TOPIC_ID: "42" },
    (fake) => fake.topics.add(42),
  );
  assert.equal(forum.code, 0, forum.err.join("\n"));
  assert.ok(forum.out.some((line) => line.startsWith("topic: 42 ")), forum.out.join("\n"));
  const plain = await contactd(["check"], { MESSENGER_TOPIC_ID: "42" });
  assert.equal(plain.code, 1);
  assert.match(plain.err.join("\n"), /no forum topics: unset MESSENGER_TOPIC_ID/);
});

Deno.test("check lists every form of FORMS with its chat and topic, and checks each chat", async () => {
  const settings = {
    FORMS: "support,sales",
    FORM_SUPPORT_TOPIC_ID: "42",
    FORM_SALES_CHAT_ID: "-100777",
    FORM_SALES_TITLE: "Sales",
  };
  const ok = await contactd(["check"], settings, (fake) => {
    fake.topics.add(42);
    fake.chats.add(-100777);
  });
  assert.equal(ok.code, 0, ok.err.join("\n"));
  assert.deepEqual(ok.fake.calls.map((call) => call.method), [
    "getMe",
    "getChat",
    "getChat",
    "getChat",
  ]);
  assert.ok(
    ok.out.includes(
      `form support: POST /api/contact/support to chat ${CHAT_ID} (the service's chat), ` +
        'topic 42 ("support")',
    ),
    ok.out.join("\n"),
  );
  assert.ok(ok.out.includes('form sales: POST /api/contact/sales to chat -100777 ("Sales")'));
  // A form's chat the bot cannot reach fails the check, naming it.
  const unreachable = await contactd(["check"], settings, (fake) => fake.topics.add(42));
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.err.join("\n"), /chat -100777 is not reachable/);
  // A form's topic in a chat without topics names the form's setting.
  const noForum = await contactd(["check"], { FORMS: "a", FORM_A_TOPIC_ID: "5" });
  assert.equal(noForum.code, 1);
  assert.match(noForum.err.join("\n"), /no forum topics: unset FORM_A_TOPIC_ID/);
});
