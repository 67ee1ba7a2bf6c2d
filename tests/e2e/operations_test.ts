/**
 * End to end, the operator's view (issue 20): the bot named at start, a refused token that
 * still starts, health that tells the truth about delivery, a taken port, RATE_LIMIT.
 */
import assert from "node:assert/strict";
import { apiError, startFakeBotApi } from "../support/fake_bot_api.ts";
import {
  baseEnv,
  CHAT_ID,
  freePort,
  runToExit,
  startService,
  TOKEN,
  withService,
} from "../support/service.ts";

Deno.test("e2e: one getMe at start; the listening line names the bot", async () => {
  await withService({}, (service, fake) => {
    const listening = service.logs().find((log) => log.event === "listening");
    assert.equal(listening?.bot, "@contactd_test_bot");
    assert.equal(fake.getMeCalls, 1);
    return Promise.resolve();
  });
});

Deno.test("e2e: a refused token still starts and stores; one bot_token_refused line with the fix; health 503 paused once delivery pauses", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  const revoked = "123456789:AAE_revoked-token-value";
  const service = await startService({
    MESSENGER_BOT_TOKEN: revoked,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: fake.url,
    DELIVERY_WAIT_MS: "2000",
  });
  try {
    const refused = service.logs().filter((log) => log.event === "bot_token_refused");
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.level, "error");
    assert.match(String(refused[0]!.hint), /@BotFather/);
    assert.equal(service.logs().find((log) => log.event === "listening")?.bot, undefined);
    const response = await service.post({ message: "kept" });
    assert.equal(response.status, 502);
    assert.equal((await response.json()).stored, true);
    const health = await fetch(`${service.url}/api/health`);
    assert.equal(health.status, 503);
    assert.deepEqual(await health.json(), {
      ok: false,
      configured: true,
      delivery: "paused",
      pending: 1,
    });
    assert.equal((await service.records()).length, 1);
    for (const line of [...service.stdout, ...service.stderr]) {
      assert.ok(!line.includes("AAE_revoked"), line);
    }
  } finally {
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
  }
});

Deno.test("e2e: a refused token shows in health at once, before any submission: at start (getMe) and from the chat's getUpdates", async () => {
  // At start: the one getMe is refused.
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  const service = await startService({
    MESSENGER_BOT_TOKEN: "123456789:AAE_revoked-token-value",
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: fake.url,
    CHAT_ACTIONS: "0",
  });
  try {
    const health = await fetch(`${service.url}/api/health`);
    assert.equal(health.status, 503);
    assert.deepEqual(await health.json(), {
      ok: false,
      configured: true,
      delivery: "paused",
      pending: 0,
    });
    const paused = service.logs().filter((line) => line.event === "delivery_paused");
    assert.equal(paused.length, 1, JSON.stringify(service.logs()));
    assert.match(String(paused[0]!.hint), /@BotFather/);
  } finally {
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
  }
  // Running: getMe answered, then the token revoked; the chat's long poll sees it first.
  const polled = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID, scriptGetUpdates: true });
  for (let i = 0; i < 10; i++) polled.script.push(apiError(401, "Unauthorized"));
  const running = await startService({
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: polled.url,
  });
  try {
    let body: Record<string, unknown> = {};
    for (let i = 0; i < 50 && body.delivery !== "paused"; i++) {
      body = await (await fetch(`${running.url}/api/health`)).json();
      if (body.delivery !== "paused") await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual(body, { ok: false, configured: true, delivery: "paused", pending: 0 });
    assert.equal(polled.calls.filter((call) => call.method === "sendMessage").length, 0);
  } finally {
    await running.stop();
    await polled.close();
    await Deno.remove(running.dir, { recursive: true });
  }
});

Deno.test("e2e: a port in use stops start-up with listen_failed naming the address and the fix", async () => {
  const port = freePort();
  const taken = Deno.listen({ hostname: "127.0.0.1", port });
  try {
    const result = await runToExit({ PORT: String(port) });
    assert.equal(result.code, 1);
    const log = JSON.parse(result.stderr.trim().split("\n").at(-1)!);
    assert.equal(log.event, "listen_failed");
    assert.equal(log.address, `127.0.0.1:${port}`);
    assert.match(log.error, /^AddrInUse/);
    assert.match(log.hint, new RegExp(`another process listens on 127\\.0\\.0\\.1:${port}`));
  } finally {
    taken.close();
  }
});

Deno.test("e2e: RATE_LIMIT=2/60s answers the 3rd POST from one address 429", async () => {
  await withService({ RATE_LIMIT: "2/60s" }, async (service) => {
    for (let i = 0; i < 2; i++) {
      const response = await service.post({ message: `m${i}` }, "203.0.113.9");
      assert.equal(response.status, 200);
      await response.body?.cancel();
    }
    const third = await service.post({ message: "m3" }, "203.0.113.9");
    assert.equal(third.status, 429);
    assert.ok(Number(third.headers.get("retry-after")) > 0);
    await third.body?.cancel();
  });
});

Deno.test("e2e: SERVE_EXAMPLE=1 with CHALLENGE=altcha is refused at start, naming SERVE_EXAMPLE", async () => {
  const result = await runToExit({
    SERVE_EXAMPLE: "1",
    CHALLENGE: "altcha",
    CHALLENGE_SECRET: "k".repeat(44),
  });
  assert.equal(result.code, 1);
  const log = JSON.parse(result.stderr.trim().split("\n").at(-1)!);
  assert.equal(log.event, "config_invalid");
  assert.equal(log.setting, "SERVE_EXAMPLE");
});

Deno.test("e2e: files beside MESSAGES_FILE outside the permissions stop start-up with contactd's advice, never Deno's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-perm-" });
  const file = `${dir}/messages.jsonl`;
  try {
    // Write is granted for the backup file alone: the files beside it are refused.
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--allow-net",
        "--allow-env",
        `--allow-read=${file}`,
        `--allow-write=${file}`,
        new URL("../../main.ts", import.meta.url).pathname,
      ],
      cwd: dir,
      clearEnv: true,
      env: { ...baseEnv(), PORT: String(freePort()), MESSAGES_FILE: file },
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, stderr);
    const log = JSON.parse(stderr.trim().split("\n").at(-1)!);
    assert.match(log.event, /_failed$/);
    assert.match(log.error, /^NotCapable: Requires (read|write) access/);
    assert.match(log.hint, /deno task start grants what MESSAGES_FILE names/);
    assert.doesNotMatch(stderr, /--allow-all|run again with/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
