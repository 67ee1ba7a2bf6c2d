import assert from "node:assert/strict";
import { pathOf } from "../../lib/http/handler.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { tallyRefusals } from "../../lib/log/tally.ts";
import { PEER, post, postForm, setup } from "../support/handler_setup.ts";

Deno.test("POST /api/contact notifies, stores one record, then answers 200 {ok:true}", async () => {
  const { state, handler } = setup();
  const response = await handler(post({ name: "Ann", contact: "@ann", message: "Hello" }), PEER);
  assert.equal(response.status, 200);
  assert.equal(await response.text(), '{"ok":true}');
  assert.equal(response.headers.get("content-type"), "application/json");
  assert.equal(state.texts.length, 1);
  assert.match(state.texts[0]!, /Hello/);
  // The record carries the submission's id, the #id the chat shows.
  assert.match(state.texts[0]!, /#id000001\b/);
  assert.deepEqual(state.lines.map((line) => JSON.parse(line)), [{
    ts: "2026-11-22T14:03:09Z",
    id: "id000001",
    name: "Ann",
    contact: "@ann",
    message: "Hello",
    ip: "198.51.100.1",
    messenger_ok: true,
    messenger_error: null,
  }]);
});

Deno.test("POST /api/contact answers 429 to the 6th POST within 60 s, with Retry-After", async () => {
  const { state, handler } = setup();
  for (let i = 0; i < 5; i++) {
    assert.equal((await handler(post({ message: `m${i}` }), PEER)).status, 200);
    state.now = new Date(state.now.getTime() + 1000);
  }
  const refused = await handler(post({ message: "sixth" }), PEER);
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("retry-after"), "55"); // first POST at +0 s, now +5 s
  assert.equal((await refused.json()).error, "rate_limited");
  assert.equal(state.lines.length, 5);
  assert.equal(state.texts.length, 5);
  // Another address is counted separately.
  assert.equal((await handler(post({ message: "x" }, {}, "198.51.100.2"), PEER)).status, 200);
  // The window slides: 60 s after the first POST one slot frees.
  state.now = new Date("2026-11-22T14:04:09.500Z");
  assert.equal((await handler(post({ message: "later" }), PEER)).status, 200);
});

Deno.test("POST /api/contact counts invalid, oversize and honeypot POSTs toward the limit", async () => {
  const { state, handler } = setup();
  const bodies = ["{", { website: "x", message: "m" }, { message: 1 }, "x".repeat(20_000), {}];
  for (const body of bodies) await handler(post(body), PEER);
  assert.equal((await handler(post({ message: "ok" }), PEER)).status, 429);
  assert.equal(state.lines.length, 0);
});

Deno.test("POST /api/contact answers a honeypot hit byte-identically to success, storing nothing", async () => {
  const { state, handler } = setup();
  const bot = await handler(post({ website: "http://spam", message: "a".repeat(5000) }), PEER);
  const real = await handler(post({ message: "hi" }, {}, "198.51.100.9"), PEER);
  assert.equal(bot.status, 200);
  assert.equal(await bot.text(), await real.text());
  assert.deepEqual([...bot.headers], [...real.headers]);
  assert.equal(state.texts.length, 1);
  assert.equal(state.lines.length, 1);
});

Deno.test("POST /api/contact answers 413 for bodies over 16384 bytes, 415 for other types", async () => {
  const { handler } = setup();
  const big = await handler(post({ message: "a".repeat(16_400) }), PEER);
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error, "payload_too_large");
  for (const type of ["text/plain", "multipart/mixed; boundary=x", "application/jsonx"]) {
    const response = await handler(
      post({ message: "m" }, { "content-type": type }, "10.9.9.9"),
      PEER,
    );
    assert.equal(response.status, 415, type);
  }
  const charset = await handler(
    post({ message: "m" }, { "content-type": "Application/JSON; charset=utf-8" }, "10.9.9.8"),
    PEER,
  );
  assert.equal(charset.status, 200);
});

Deno.test("POST /api/contact answers 400 with code, field and sentence for invalid fields", async () => {
  const { state, handler } = setup();
  const response = await handler(post({ message: "m", name: "a".repeat(201) }), PEER);
  assert.equal(response.status, 400);
  assert.deepEqual(await response.json(), {
    ok: false,
    error: "field_too_long",
    field: "name",
    message: "name must be at most 200 characters.",
  });
  const json = await handler(post("{not json"), PEER);
  assert.deepEqual(await json.json(), {
    ok: false,
    error: "invalid_json",
    message: "The request body is not valid JSON.",
  });
  assert.equal(state.lines.length, 0);
  assert.equal(state.texts.length, 0);
});

Deno.test("POST /api/contact answers 502 when delivery fails, with the record kept", async () => {
  const { state, handler } = setup({
    deliver: () => Promise.resolve({ ok: false, error: "500 Internal Server Error" }),
  });
  const response = await handler(post({ message: "m" }), PEER);
  assert.equal(response.status, 502);
  assert.equal((await response.json()).error, "delivery_failed");
  const record = JSON.parse(state.lines[0]!);
  assert.equal(record.messenger_ok, false);
  assert.equal(record.messenger_error, "500 Internal Server Error");
});

Deno.test("POST /api/contact answers 503 when not configured and records 'not configured'", async () => {
  const { state, handler } = setup({ deliver: "unconfigured" });
  const response = await handler(post({ message: "m" }), PEER);
  assert.equal(response.status, 503);
  assert.equal((await response.json()).error, "not_configured");
  assert.equal(JSON.parse(state.lines[0]!).messenger_error, "not configured");
});

Deno.test("POST /api/contact answers 500 when it is neither delivered nor in the outbox", async () => {
  const { state, handler } = setup({
    deliver: () => Promise.resolve({ ok: false, error: "timeout" }),
    store: () => Promise.reject(new Error("ENOSPC")),
    append: () => Promise.reject(new Error("ENOSPC")),
  });
  const response = await handler(post({ message: "m" }), PEER);
  assert.equal(response.status, 500);
  const body = await response.json();
  assert.equal(body.error, "internal");
  assert.equal(body.stored, undefined); // "send it again", not "saved"
  assert.ok(state.logs.some((log) => log.event === "outbox_write_failed"));
});

Deno.test("POST /api/contact answers 502 stored when the outbox holds it, even if the backup record failed", async () => {
  const { state, handler } = setup({
    deliver: () => Promise.resolve({ ok: false, error: "timeout" }),
    append: () => Promise.reject(new Error("EACCES")),
  });
  const response = await handler(post({ message: "m" }), PEER);
  assert.equal(response.status, 502);
  assert.equal((await response.json()).stored, true);
  assert.equal(state.outbox.length, 1);
  assert.ok(state.logs.some((log) => log.event === "backup_write_failed"));
  // No "recorded" note: the next start writes the missing record.
  assert.equal(state.answered.size, 0);
  const health = await handler(new Request("http://localhost/api/health"), PEER);
  assert.equal(health.status, 503);
  assert.equal((await health.json()).ok, false);
});

Deno.test("POST /api/contact answers a delivered message 200 even when the outbox failed", async () => {
  const { state, handler } = setup({ store: () => Promise.reject(new Error("EIO")) });
  const response = await handler(post({ message: "m" }), PEER);
  assert.equal(response.status, 200);
  assert.equal(state.texts.length, 1);
  assert.equal(JSON.parse(state.lines[0]!).messenger_ok, true);
});

Deno.test("a delivered message whose record failed answers 200 and turns health ok:false until a write works", async () => {
  let failing = true;
  const { state, handler } = setup({
    append: (line) =>
      failing ? Promise.reject(new Error("ENOSPC")) : (state.lines.push(line), Promise.resolve()),
  });
  assert.equal((await handler(post({ message: "m" }), PEER)).status, 200);
  assert.ok(state.logs.some((log) => log.level === "error" && log.event === "backup_write_failed"));
  const health = async () =>
    (await handler(new Request("http://localhost/api/health"), PEER)).json();
  assert.deepEqual(await health(), { ok: false, configured: true, delivery: "ok", pending: 0 });
  failing = false;
  assert.equal((await handler(post({ message: "m2" }), PEER)).status, 200);
  assert.deepEqual(await health(), { ok: true, configured: true, delivery: "ok", pending: 0 });
});

Deno.test("GET /api/health reports exactly ok, configured, delivery and pending, never cached", async () => {
  const configured = await setup().handler(new Request("http://localhost/api/health"), PEER);
  assert.equal(configured.status, 200);
  assert.equal(
    await configured.text(),
    '{"ok":true,"configured":true,"delivery":"ok","pending":0}',
  );
  // The one answer to a GET that a cache could keep: it says not to.
  assert.equal(configured.headers.get("cache-control"), "no-store");
});

Deno.test("GET /api/health answers 503 ok:false while delivery is paused for a settings problem", async () => {
  let status: { state: "ok" | "outage" | "paused"; reason?: string; pending: number } = {
    state: "paused",
    reason: "401 Unauthorized",
    pending: 3,
  };
  const { handler } = setup({ deliveryStatus: () => status });
  const health = () => handler(new Request("http://localhost/api/health"), PEER);
  const paused = await health();
  assert.equal(paused.status, 503);
  assert.equal(paused.headers.get("cache-control"), "no-store");
  // The reason stays in the log: health may be public.
  assert.deepEqual(await paused.json(), {
    ok: false,
    configured: true,
    delivery: "paused",
    pending: 3,
  });
  status = { state: "outage", pending: 4 };
  const outage = await health();
  assert.equal(outage.status, 200);
  assert.deepEqual(await outage.json(), {
    ok: true,
    configured: true,
    delivery: "outage",
    pending: 4,
  });
});

Deno.test("GET /api/health of an unconfigured service answers 503: configured false, delivery paused", async () => {
  const { handler } = setup({
    deliver: "unconfigured",
    deliveryStatus: () => ({ state: "paused", reason: "not_configured", pending: 2 }),
  });
  const health = await handler(new Request("http://localhost/api/health"), PEER);
  assert.equal(health.status, 503);
  assert.deepEqual(await health.json(), {
    ok: false,
    configured: false,
    delivery: "paused",
    pending: 2,
  });
  const head = await handler(new Request("http://localhost/api/health", { method: "HEAD" }), PEER);
  assert.equal(head.status, 503);
});

Deno.test("unknown paths answer 404 and wrong methods 405 with Allow", async () => {
  const { handler } = setup();
  const missing = await handler(new Request("http://localhost/api/contacts"), PEER);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error, "not_found");
  const get = await handler(new Request("http://localhost/api/contact"), PEER);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST");
  const postHealth = await handler(
    new Request("http://localhost/api/health", { method: "POST" }),
    PEER,
  );
  assert.equal(postHealth.headers.get("allow"), "GET, HEAD");
});

Deno.test("an unexpected error answers 500 with a fixed message and logs the details", async () => {
  const { state, handler } = setup({
    deliver: () => Promise.reject(new Error("boom secret detail")),
  });
  const response = await handler(post({ message: "m" }), PEER);
  assert.equal(response.status, 500);
  const text = await response.text();
  assert.ok(!text.includes("boom"));
  assert.ok(
    state.logs.some((log) => log.event === "internal_error" && String(log.error).includes("boom")),
  );
});

Deno.test("an unexpected error in the rules after the body answers 500, JSON or plain text", async () => {
  const { state, handler } = setup({
    onLog: (fields) => {
      if (fields.result === "honeypot") throw new Error("log sink gone");
    },
  });
  const json = await handler(post({ message: "m", website: "x" }), PEER);
  assert.equal(json.status, 500);
  assert.equal((await json.json()).error, "internal");
  const form = await handler(postForm({ message: "m", website: "x" }), PEER);
  assert.equal(form.status, 500);
  assert.match(form.headers.get("content-type") ?? "", /^text\/plain/);
  await form.body?.cancel();
  assert.equal(state.logs.filter((log) => log.event === "internal_error").length, 2);
});

Deno.test("forwarded headers from an untrusted peer are ignored for limits and records", async () => {
  const { state, handler } = setup();
  const peer = { remoteAddr: { hostname: "203.0.113.50" } };
  for (let i = 0; i < 5; i++) {
    await handler(
      post({ message: "m" }, { "x-forwarded-for": `10.0.0.${i}` }, `10.1.0.${i}`),
      peer,
    );
  }
  assert.equal((await handler(post({ message: "m" }, {}, "10.2.0.1"), peer)).status, 429);
  assert.ok(state.lines.every((line) => JSON.parse(line).ip === "203.0.113.50"));
});

Deno.test("logs carry no message text, name or contact", async () => {
  const { state, handler } = setup({
    deliver: () => Promise.resolve({ ok: false, error: "timeout" }),
  });
  await handler(
    post({ name: "SecretName", contact: "SecretContact", message: "SecretText" }),
    PEER,
  );
  const logs = JSON.stringify(state.logs);
  for (const secret of ["SecretName", "SecretContact", "SecretText"]) {
    assert.ok(!logs.includes(secret));
  }
});

Deno.test("POST /api/contact answers 408 request_timeout when the body does not arrive in time", async () => {
  const deadline = new AbortController();
  const { state, handler } = setup({ bodyDeadline: () => deadline.signal });
  // Headers arrived, then the client went quiet after one byte.
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode("{"));
    },
  });
  const pending = handler(
    new Request("http://localhost/api/contact", {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.1" },
      body,
    }),
    PEER,
  );
  deadline.abort();
  const response = await pending;
  assert.equal(response.status, 408);
  assert.equal(response.headers.get("connection"), "close");
  assert.equal((await response.json()).error, "request_timeout");
  assert.equal(state.lines.length, 0);
  assert.equal(state.texts.length, 0);
  assert.ok(state.logs.some((log) => log.status === 408 && log.result === "request_timeout"));
});

Deno.test("REAL_IP_HEADER=X-Forwarded-For: a forged X-Real-IP or left entry cannot pick the bucket", async () => {
  const { state, handler } = setup();
  for (let i = 0; i < 5; i++) {
    const forged = { "x-real-ip": `6.6.6.${i}`, "x-forwarded-for": `6.6.7.${i}, 198.51.100.1` };
    assert.equal((await handler(post({ message: "m" }, forged), PEER)).status, 200);
  }
  const sixth = post({ message: "m" }, {
    "x-real-ip": "6.6.6.9",
    "x-forwarded-for": "198.51.100.1",
  });
  assert.equal((await handler(sixth, PEER)).status, 429);
  assert.ok(state.lines.every((line) => JSON.parse(line).ip === "198.51.100.1"));
});

Deno.test("REAL_IP_HEADER=X-Real-IP: the proxy's X-Real-IP counts, X-Forwarded-For is not read", async () => {
  const { state, handler } = setup({ realIpHeader: "x-real-ip" });
  for (let i = 0; i < 5; i++) {
    const forged = { "x-real-ip": "198.51.100.1", "x-forwarded-for": `6.6.7.${i}` };
    assert.equal((await handler(post({ message: "m" }, forged), PEER)).status, 200);
  }
  const sixth = post({ message: "m" }, {
    "x-real-ip": "198.51.100.1",
    "x-forwarded-for": "6.6.6.9",
  });
  assert.equal((await handler(sixth, PEER)).status, 429);
  assert.ok(state.lines.every((line) => JSON.parse(line).ip === "198.51.100.1"));
});

/** A request as Deno hands it over with a `Host` header `new URL` cannot parse. */
function withHost(host: string, method: string, target: string, body?: string): Request {
  const real = new Request(`http://localhost${target}`, {
    method,
    headers: { "content-type": "application/json", host },
    ...(body === undefined ? {} : { body }),
  });
  // `new Request` itself refuses such a URL; Deno's server builds it without parsing.
  return new Proxy(real, {
    get: (target, key) => {
      if (key === "url") return `http://${host}${target.url.slice("http://localhost".length)}`;
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

// Hosts RFC 9112 §3.2 calls invalid (RFC 3986's grammar: `new URL` throws on the first seven
// and misplaces the path after the last three).
const BAD_HOSTS = [
  "[bad",
  "%zz",
  "[::1",
  "[1::2::3]",
  "ex ample",
  "x:99999",
  "[1.2.3.4]",
  "a?b",
  "a#b",
  "a/b",
];

Deno.test("a request with an invalid Host header is answered 400 invalid_host on every route, before anything else", async () => {
  for (const host of BAD_HOSTS) {
    const { state, handler } = setup();
    const health = await handler(withHost(host, "GET", "/api/health?x=1"), PEER);
    assert.equal(health.status, 400, host);
    assert.equal((await health.json()).error, "invalid_host", host);
    const contact = await handler(withHost(host, "POST", "/api/contact", '{"message":"m"}'), PEER);
    assert.equal(contact.status, 400, host);
    await contact.body?.cancel();
    const other = await handler(withHost(host, "GET", "/nowhere"), PEER);
    assert.equal(other.status, 400, host);
    await other.body?.cancel();
    assert.equal(state.lines.length + state.texts.length + state.outbox.length, 0, host);
    assert.deepEqual(state.logs.filter((log) => log.level !== "info"), [], host);
  }
});

Deno.test("valid Hosts are served: names, IPv4, IPv6 and IPvFuture literals, ports, empty", async () => {
  const hosts = ["localhost:8787", "127.0.0.1", "[::1]:80", "Example.ORG", "", "[v1.x]", "a%41b"];
  for (const host of hosts) {
    const { handler } = setup();
    const health = await handler(withHost(host, "GET", "/api/health"), PEER);
    assert.equal(health.status, 200, host);
    await health.body?.cancel();
  }
});

Deno.test("a flood of invalid Hosts makes no line per request: one tallied summary", async () => {
  const { state, handler } = setup();
  for (let i = 0; i < 50; i++) {
    await (await handler(withHost(`[bad${i}`, "GET", "/api/health"), PEER)).body?.cancel();
  }
  const written: LogFields[] = [];
  const tally = tallyRefusals((_level, fields) => written.push(fields));
  for (const { level, ...fields } of state.logs) tally.log(level, fields);
  assert.deepEqual(written, []);
  tally.flush();
  assert.deepEqual(written, [{ event: "contact_summary", refused: 50, invalid_host: 50 }]);
});

Deno.test("pathOf takes the path after the authority Deno put in request.url, as new URL would", () => {
  const cases: Array<[url: string, host: string | null, path: string]> = [
    ["http://[bad/api/health?x=1", "[bad", "/api/health"],
    ["http://%zz/api/contact#f", "%zz", "/api/contact"],
    ["http://a?b/api/health?x=1", "a?b", "/api/health"],
    ["http://a/api/health?/x", "a/api/health?", "/x"], // the Host text is skipped whole
    ["http://a#b/api/health", "a#b", "/api/health"],
    ["http://other/api/health", "x", "/api/health"], // absolute-form target: its own authority
    ["http://localhost:8787/api/health", null, "/api/health"], // no Host (HTTP/1.0)
    ["http:///api/health", "", "/api/health"],
    ["http://x/api/./health", "x", "/api/health"], // dot segments normalise as before
    ["http://x//evil/api/health", "x", "//evil/api/health"], // never read as an authority
    ["http://x/*", "x", "/*"], // OPTIONS *
    ["http://x", "x", ""],
    ["http://x?y", "x", ""],
    ["no-scheme", null, ""],
  ];
  for (const [url, host, path] of cases) assert.equal(pathOf(url, host), path, url);
});

Deno.test("ALLOWED_ORIGINS set: a flood of foreign-origin POSTs and of preflights makes no line per request, one summary", async () => {
  const site = "https://site.example";
  const { state, handler } = setup({ allowedOrigins: [site] });
  const preflight = (origin: string) =>
    new Request("http://localhost/api/contact", {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST" },
    });
  for (let i = 0; i < 40; i++) {
    const origin = `https://evil${i}.example`;
    assert.equal((await handler(post({ message: "spam" }, { origin }), PEER)).status, 403);
    assert.equal((await handler(preflight(origin), PEER)).status, 403);
    assert.equal((await handler(preflight(site), PEER)).status, 204);
  }
  // Every line the handler wrote goes through the tally, as main.ts wires it.
  assert.equal(state.logs.length, 120);
  const written: LogFields[] = [];
  const tally = tallyRefusals((_level, fields) => written.push(fields));
  for (const { level, ...fields } of state.logs) tally.log(level, fields);
  assert.deepEqual(written, []);
  tally.flush();
  assert.equal(written.length, 1);
  assert.deepEqual(written[0], {
    event: "contact_summary",
    refused: 80,
    origin_not_allowed: 40,
    preflight_origin_not_allowed: 40,
    preflight: 40,
    refused_origin: "https://evil0.example",
  });
});
