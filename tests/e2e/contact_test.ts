/**
 * End to end: the real service process, the real HTTP stack, a fake Bot API on loopback.
 */
import assert from "node:assert/strict";
import { tooManyRequests } from "../support/fake_bot_api.ts";
import {
  CHAT_ID,
  freePort,
  runToExit,
  startService,
  TOKEN,
  withService,
} from "../support/service.ts";

Deno.test("e2e: a submission is delivered, recorded with mode 0600 and answered 200", async () => {
  await withService({}, async (service, fake) => {
    const response = await service.post(
      { name: "Ann <3", contact: "@ann", message: "Hello *there* <b>x</b>" },
      "203.0.113.7",
    );
    assert.equal(response.status, 200);
    // With the sender's case page (issue 33).
    assert.match(
      await response.text(),
      /^\{"ok":true,"case_url":"\/api\/case\/[A-Za-z0-9_-]{32}"\}$/,
    );
    assert.equal(fake.calls.length, 1);
    const call = fake.calls[0]!;
    assert.equal(call.method, "sendMessage");
    assert.equal(call.token, TOKEN);
    assert.equal(call.body.chat_id, CHAT_ID);
    assert.equal(call.body.parse_mode, undefined);
    assert.deepEqual(call.body.link_preview_options, { is_disabled: true });
    assert.match(fake.delivered[0]!, /Ann <3[\s\S]*Hello \*there\* <b>x<\/b>/);
    const [record, ...rest] = await service.records();
    assert.equal(rest.length, 0);
    assert.equal(record!.ip, "203.0.113.7");
    assert.equal(record!.messenger_ok, true);
    assert.equal(record!.messenger_error, null);
    assert.match(String(record!.ts), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal((await Deno.stat(service.file)).mode! & 0o777, 0o600);
    const health = await fetch(`${service.url}/api/health`);
    assert.equal(health.status, 200);
    assert.equal(
      await health.text(),
      '{"ok":true,"configured":true,"delivery":"ok","pending":0}',
    );
  });
});

Deno.test("e2e: a 4400-character astral message is split, every part delivered in order, each later part marked", async () => {
  await withService({}, async (service, fake) => {
    const message = "\u{1F600}".repeat(2000) + "\n" + "word ".repeat(399);
    const response = await service.post({ name: "\u{1F600}".repeat(200), message });
    assert.equal(response.status, 200);
    const parts = fake.delivered;
    assert.ok(parts.length >= 2);
    for (const part of parts) assert.ok(part.length <= 4096);
    const id = /^New contact message #([0-9a-z]{8}) \(1\/(\d+)\)\n/.exec(parts[0]!);
    assert.ok(id !== null, parts[0]!.slice(0, 80));
    assert.equal(Number(id[2]), parts.length);
    const texts = [parts[0]!.slice(parts[0]!.indexOf("\n\n") + 2)];
    for (const [i, part] of parts.slice(1).entries()) {
      const marker = `(${i + 2}/${parts.length}) #${id[1]}\n`;
      assert.ok(part.startsWith(marker), part.slice(0, 40));
      texts.push(part.slice(marker.length));
    }
    assert.equal(texts.join("").replace(/\s/g, ""), message.replace(/\s/g, ""));
  });
});

Deno.test("e2e: a 429 with retry_after 1 is waited out and delivered", async () => {
  await withService({}, async (service, fake) => {
    fake.script.push(tooManyRequests(1));
    const response = await service.post({ message: "m" });
    assert.equal(response.status, 200);
    assert.equal(fake.calls.length, 2);
    assert.equal((await service.records())[0]!.messenger_ok, true);
  });
});

Deno.test("e2e: after a 429 with retry_after 3600 the API is not called; submissions answer 502 stored at once, recorded", async () => {
  await withService({}, async (service, fake) => {
    fake.script.push(tooManyRequests(3600));
    const first = await service.post({ message: "one" }, "198.51.100.1");
    assert.equal(first.status, 502);
    assert.equal((await first.json()).stored, true);
    const started = Date.now();
    const second = await service.post({ message: "two" }, "198.51.100.2");
    assert.equal(second.status, 502);
    const body = await second.json();
    assert.equal(body.error, "delivery_failed");
    assert.equal(body.stored, true);
    assert.ok(Date.now() - started < 2000, "answered at once, not after DELIVERY_WAIT_MS");
    assert.equal(fake.calls.length, 1);
    const records = await service.records();
    assert.deepEqual(records.map((r) => r.message), ["one", "two"]);
    for (const record of records) {
      assert.equal(record.messenger_ok, false);
      assert.match(String(record.messenger_error), /^queued: flood control, retry after 3\d{3} s$/);
    }
  });
});

Deno.test("e2e: a Bot API that hangs past the timeout answers 502 and records 'timeout'", async () => {
  await withService({ MESSENGER_TIMEOUT_MS: "300" }, async (service, fake) => {
    fake.script.push("hang");
    const response = await service.post({ message: "m" });
    assert.equal(response.status, 502);
    assert.equal((await response.json()).error, "delivery_failed");
    const [record] = await service.records();
    assert.equal(record!.messenger_ok, false);
    assert.equal(record!.messenger_error, "timeout");
  });
});

Deno.test("e2e: a refused connection answers 502 and the record names it without the token", async () => {
  await withService({ MESSENGER_API_URL: `http://127.0.0.1:${freePort()}` }, async (service) => {
    const response = await service.post({ message: "m" });
    assert.equal(response.status, 502);
    const text = await response.text();
    assert.ok(!text.includes(TOKEN));
    const [record] = await service.records();
    assert.match(String(record!.messenger_error), /connection refused/);
  });
});

Deno.test("e2e: the 6th POST from one client within 60 s gets 429 and is not delivered", async () => {
  await withService({}, async (service, fake) => {
    const started = Date.now();
    for (let i = 0; i < 5; i++) {
      assert.equal((await service.post({ message: `m${i}` })).status, 200);
    }
    const refused = await service.post({ message: "sixth" });
    assert.equal(refused.status, 429);
    // The window began with the first POST; the five were paced (about a second apart).
    const elapsed = Math.ceil((Date.now() - started) / 1000);
    assert.ok(Number(refused.headers.get("retry-after")) >= 60 - elapsed);
    assert.ok(Number(refused.headers.get("retry-after")) <= 60);
    await refused.body?.cancel();
    assert.equal(fake.delivered.length, 5);
    assert.equal((await service.records()).length, 5);
  });
});

Deno.test("e2e: an IPv6 client rotating through its /64 is limited as one client", async () => {
  await withService({}, async (service, fake) => {
    for (let i = 1; i <= 5; i++) {
      const response = await service.post({ message: `m${i}` }, `2001:db8:1:2::${i.toString(16)}`);
      assert.equal(response.status, 200);
      await response.body?.cancel();
    }
    const rotated = await service.post({ message: "x" }, "2001:db8:1:2:ffff:ffff:ffff:ffff");
    assert.equal(rotated.status, 429);
    await rotated.body?.cancel();
    const neighbour = await service.post({ message: "y" }, "2001:db8:1:3::1");
    assert.equal(neighbour.status, 200);
    await neighbour.body?.cancel();
    assert.equal(fake.delivered.length, 6);
  });
});

Deno.test("e2e: 200 concurrent submissions from distinct addresses: 200 whole records, 200 only for the delivered, the rest 502 stored at once", async () => {
  await withService({}, async (service, fake) => {
    const count = 200;
    const started = Date.now();
    const responses = await Promise.all(
      Array.from(
        { length: count },
        (_, i) => service.post({ message: `msg ${i}` }, `10.${i >> 8}.${i & 255}.1`),
      ),
    );
    // DELIVERY_WAIT_MS is 10 s: nobody waits longer, and those who cannot make it are told at once.
    assert.ok(Date.now() - started < 12_000);
    const answered = new Map<string, number>();
    for (const [i, response] of responses.entries()) {
      const body = await response.json();
      answered.set(`msg ${i}`, response.status);
      if (response.status === 200) continue;
      assert.equal(response.status, 502);
      assert.equal(body.stored, true);
    }
    const lines = (await Deno.readTextFile(service.file)).split("\n");
    assert.equal(lines.pop(), "");
    const records = lines.map((line) => JSON.parse(line)); // every line whole JSON
    assert.equal(records.length, count);
    const expected = Array.from({ length: count }, (_, i) => `msg ${i}`).sort();
    assert.deepEqual(records.map((record) => record.message).sort(), expected);
    assert.equal(new Set(records.map((record) => record.ip)).size, count);
    for (const record of records) {
      assert.equal(record.messenger_ok, answered.get(record.message) === 200, record.message);
    }
    // Paced: a burst of 3, then about one a second (a delivered 502 may be the one in flight).
    const ok = [...answered.values()].filter((status) => status === 200).length;
    assert.ok(ok >= 8 && ok <= 14, `${ok} delivered within the wait`);
    const delivered = fake.delivered.map((text) => text.split("\n").at(-1)!);
    for (const [message, status] of answered) {
      if (status === 200) assert.ok(delivered.includes(message), message);
    }
    assert.equal(fake.floods, 0, "never tripped the flood control");
  });
});

Deno.test("e2e: unconfigured service runs, warns, answers 503 and still records", async () => {
  const service = await startService({});
  try {
    assert.ok(service.logs().some((log) => log.event === "not_configured" && log.level === "warn"));
    const health = await fetch(`${service.url}/api/health`);
    assert.equal(health.status, 503);
    assert.deepEqual(await health.json(), {
      ok: false,
      configured: false,
      delivery: "paused",
      pending: 0,
    });
    const response = await service.post({ message: "m" });
    assert.equal(response.status, 503);
    await response.body?.cancel();
    const after = await (await fetch(`${service.url}/api/health`)).json();
    assert.equal(after.pending, 1);
    const [record] = await service.records();
    assert.equal(record!.messenger_error, "not configured");
    assert.equal(await service.stop(), 0);
  } finally {
    await service.stop();
    await Deno.remove(service.dir, { recursive: true });
  }
});

Deno.test("e2e: SIGTERM during a slow delivery lets it finish, writes its record and exits 0", async () => {
  await withService({ MESSENGER_TIMEOUT_MS: "1500" }, async (service, fake) => {
    fake.script.push("hang");
    const pending = service.post({ message: "in flight" });
    while (fake.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const exit = service.stop("SIGTERM");
    const response = await pending;
    assert.equal(response.status, 502);
    await response.body?.cancel();
    assert.equal(await exit, 0);
    const [record] = await service.records();
    assert.equal(record!.message, "in flight");
    assert.ok(service.logs().some((log) => log.event === "stopped"));
  });
});

Deno.test("e2e: a malformed setting stops start-up with one line naming it", async () => {
  for (
    const [name, value] of [["PORT", "abc"], ["MESSENGER_API_URL", "ftp://x"], [
      "TRUSTED_PROXIES",
      "1.2.3.4/99",
    ]]
  ) {
    const result = await runToExit({ [name!]: value! });
    assert.equal(result.code, 1);
    const lines = result.stderr.trim().split("\n");
    assert.equal(lines.length, 1, result.stderr);
    const log = JSON.parse(lines[0]!);
    assert.equal(log.setting, name);
    assert.match(log.error, new RegExp(`"${name}"`));
  }
});

Deno.test("e2e: an unopenable backup file stops start-up with a clear error", async () => {
  const result = await runToExit({ MESSAGES_FILE: "/nonexistent-contactd-dir/messages.jsonl" });
  assert.equal(result.code, 1);
  const log = JSON.parse(result.stderr.trim().split("\n").at(-1)!);
  // The first file beside MESSAGES_FILE that is opened says it: the lock, then the backup file.
  assert.ok(["lock_failed", "backup_open_failed"].includes(log.event), log.event);
  assert.match(log.error, /NotFound/);
});

Deno.test("e2e: SIGTERM the moment it says 'listening' stops it gracefully, exit 0", async () => {
  for (let i = 0; i < 5; i++) {
    const service = await startService({});
    try {
      assert.equal(await service.stop("SIGTERM"), 0);
      assert.ok(service.logs().some((log) => log.event === "stopped"));
    } finally {
      await Deno.remove(service.dir, { recursive: true });
    }
  }
});

Deno.test("e2e: a Formspree-style body is delivered with every field shown and stored; _gotcha is a honeypot", async () => {
  await withService({}, async (service, fake) => {
    const body = {
      name: "Carl",
      email: "carl@example.org",
      subject: "Quote",
      phone: "+1 555",
      message: "Please call me",
    };
    assert.equal((await service.post(body)).status, 200);
    assert.equal((await service.post({ ...body, _gotcha: "bot" })).status, 200);
    assert.equal(fake.delivered.length, 1);
    const text = fake.delivered[0]!;
    assert.match(text, /\nSubject: Quote\nFrom: Carl\nContact \(email\): carl@example\.org\n/);
    assert.match(text, /\nTime: [^\n]+\n· phone: \+1 555\n\nPlease call me$/);
    const records = await service.records();
    assert.equal(records.length, 1);
    assert.equal(records[0]!.contact, "carl@example.org");
    assert.deepEqual(records[0]!.fields, { subject: "Quote", phone: "+1 555" });
  });
});

Deno.test("e2e: a multipart/form-data post is delivered with its fields; one with a file is 415 and not sent", async () => {
  await withService({}, async (service, fake) => {
    const send = (form: FormData) =>
      fetch(`${service.url}/api/contact`, {
        method: "POST",
        headers: { "x-forwarded-for": "198.51.100.1" },
        body: form,
      });
    const text = new FormData();
    text.append("name", "Ann");
    text.append("budget", "5000");
    text.append("message", "Hello");
    const ok = await send(text);
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    const withFile = new FormData();
    withFile.append("message", "Hello");
    withFile.append("cv", new File(["%PDF"], "cv.pdf", { type: "application/pdf" }));
    const refused = await send(withFile);
    assert.equal(refused.status, 415);
    assert.match(await refused.text(), /Files are not accepted/);
    assert.equal(fake.delivered.length, 1);
    assert.match(fake.delivered[0]!, /· budget: 5000\n\nHello$/);
    const records = await service.records();
    assert.deepEqual(records.map((record) => record.fields), [{ budget: "5000" }]);
  });
});
