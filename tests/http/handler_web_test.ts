/**
 * The web-page side of the handler: no-JavaScript form posts, other origins, the example page.
 */
import assert from "node:assert/strict";
import { PEER, post, postForm, setup } from "../support/handler_setup.ts";

const SITE = "https://site.example";

Deno.test("a urlencoded POST is validated, delivered and stored like JSON, answered in plain text", async () => {
  const { state, handler } = setup();
  const response = await handler(
    postForm({ name: "Ann", contact: "@ann", message: "Hello\r\nthere", other: "x" }),
    PEER,
  );
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/plain; charset=utf-8");
  assert.equal(await response.text(), "Thank you. Your message was sent.\n");
  const record = JSON.parse(state.lines[0]!);
  assert.deepEqual([record.name, record.contact, record.message], ["Ann", "@ann", "Hello\nthere"]);
  assert.equal(state.texts.length, 1);
});

Deno.test("a urlencoded POST with _redirect answers 303 to it; a honeypot hit looks the same", async () => {
  const { state, handler } = setup();
  const real = await handler(postForm({ message: "hi", _redirect: "/thanks.html" }), PEER);
  const bot = await handler(
    postForm(
      { message: "x".repeat(5000), website: "spam", _redirect: "/thanks.html" },
      {},
      "10.0.0.9",
    ),
    PEER,
  );
  for (const response of [real, bot]) {
    assert.equal(response.status, 303);
    assert.equal(response.headers.get("location"), "/thanks.html");
    assert.equal(await response.text(), "");
  }
  assert.deepEqual([...real.headers], [...bot.headers]);
  assert.equal(state.lines.length, 1);
});

Deno.test("a refused urlencoded POST goes to _redirect_error?error=<code>, else plain text with the status", async () => {
  const { state, handler } = setup();
  const redirected = await handler(
    postForm({ name: "n".repeat(201), message: "m", _redirect_error: "/sorry?lang=en" }),
    PEER,
  );
  assert.equal(redirected.status, 303);
  assert.equal(redirected.headers.get("location"), "/sorry?lang=en&error=field_too_long");
  const plain = await handler(postForm({ message: " ", _redirect: "/thanks" }), PEER);
  assert.equal(plain.status, 400);
  assert.equal(plain.headers.get("location"), null);
  assert.equal(await plain.text(), "message is required.\n");
  const encoding = await handler(postForm("message=%FF&_redirect_error=%2Fsorry"), PEER);
  assert.equal(encoding.status, 400);
  assert.equal(await encoding.text(), "The request body is not valid UTF-8.\n");
  assert.equal(state.lines.length, 0);
});

Deno.test("a urlencoded POST never redirects to another site: hostile targets get plain text", async () => {
  const { handler } = setup({ allowedOrigins: [SITE] });
  const targets = [
    "//evil.com",
    "/\\evil.com",
    "javascript:alert(1)",
    "https://evil.com",
    "/thanks\r\nSet-Cookie: a=b",
    "/" + "a".repeat(2000),
  ];
  for (const [i, target] of targets.entries()) {
    const response = await handler(
      postForm({ message: "hi", _redirect: target }, {}, `10.1.0.${i}`),
      PEER,
    );
    assert.equal(response.status, 200, target);
    assert.equal(response.headers.get("location"), null, target);
    assert.equal(response.headers.get("set-cookie"), null, target);
  }
  const allowed = await handler(postForm({ message: "hi", _redirect: `${SITE}/thanks` }), PEER);
  assert.equal(allowed.status, 303);
  assert.equal(allowed.headers.get("location"), `${SITE}/thanks`);
});

Deno.test("urlencoded POSTs share the rate limit; the 6th gets 429 text with Retry-After", async () => {
  const { handler } = setup();
  for (let i = 0; i < 3; i++) await handler(postForm({ message: `m${i}` }), PEER);
  for (let i = 0; i < 2; i++) await handler(post({ message: `j${i}` }), PEER);
  const refused = await handler(postForm({ message: "six", _redirect_error: "/sorry" }), PEER);
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("retry-after"), "60");
  assert.equal(await refused.text(), "Too many messages from your address; try again later.\n");
});

Deno.test("a urlencoded POST that could not be delivered goes to the error page, its record kept", async () => {
  const { state, handler } = setup({
    deliver: () => Promise.resolve({ ok: false, error: "timeout" }),
  });
  const response = await handler(postForm({ message: "m", _redirect_error: "/sorry" }), PEER);
  assert.equal(response.status, 303);
  assert.equal(response.headers.get("location"), "/sorry?error=delivery_failed");
  assert.equal(JSON.parse(state.lines[0]!).messenger_error, "timeout");
});

Deno.test("a urlencoded body has the same 16384-byte limit as JSON (the proxy's limit)", async () => {
  const { state, handler } = setup();
  const fits = await handler(postForm({ message: "x".repeat(4000) }), PEER);
  assert.equal(fits.status, 200);
  assert.equal(JSON.parse(state.lines[0]!).message.length, 4000);
  // 4000 Cyrillic letters percent-encode to 24000 bytes: too large without JavaScript.
  const cyrillic = await handler(postForm({ message: "Ж".repeat(4000) }, {}, "10.0.0.2"), PEER);
  assert.equal(cyrillic.status, 413);
  assert.equal(await cyrillic.text(), "The request body is larger than 16384 bytes.\n");
  const json = await handler(post({ message: "Ж".repeat(4000) }, {}, "10.0.0.3"), PEER);
  assert.equal(json.status, 200); // 8000 bytes of JSON
});

Deno.test("JSON clients are unaffected: _redirect in JSON is ignored", async () => {
  const { handler } = setup();
  const response = await handler(post({ message: "hi", _redirect: "/thanks" }), PEER);
  assert.equal(response.status, 200);
  assert.equal(await response.text(), '{"ok":true}');
  assert.equal(response.headers.get("location"), null);
});

Deno.test("ALLOWED_ORIGINS unset: no CORS headers, no Origin check, no OPTIONS", async () => {
  const { handler } = setup();
  const response = await handler(post({ message: "hi" }, { origin: "https://evil.example" }), PEER);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("access-control-allow-origin"), null);
  assert.equal(response.headers.get("vary"), null);
  const options = await handler(
    new Request("http://localhost/api/contact", { method: "OPTIONS", headers: { origin: SITE } }),
    PEER,
  );
  assert.equal(options.status, 405);
  assert.equal(options.headers.get("allow"), "POST");
});

Deno.test("ALLOWED_ORIGINS set: a listed Origin gets CORS headers on every answer, 429 included", async () => {
  const { handler } = setup({ allowedOrigins: [SITE] });
  for (let i = 0; i < 5; i++) {
    const response = await handler(post({ message: `m${i}` }, { origin: SITE }), PEER);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("access-control-allow-origin"), SITE);
    assert.equal(response.headers.get("access-control-allow-credentials"), null);
  }
  const limited = await handler(post({ message: "six" }, { origin: SITE }), PEER);
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("access-control-allow-origin"), SITE);
  assert.equal(limited.headers.get("access-control-expose-headers"), "Retry-After");
  const get = await handler(new Request("http://localhost/api/contact"), PEER);
  assert.equal(get.headers.get("allow"), "POST, OPTIONS");
});

Deno.test("ALLOWED_ORIGINS set: an unlisted Origin gets 403 before it counts toward the limit", async () => {
  const { state, handler } = setup({ allowedOrigins: [SITE] });
  for (const origin of ["https://evil.example", "null", "http://site.example"]) {
    for (let i = 0; i < 3; i++) {
      const response = await handler(post({ message: "spam" }, { origin }), PEER);
      assert.equal(response.status, 403);
      assert.equal(response.headers.get("access-control-allow-origin"), null);
      assert.equal((await response.json()).error, "origin_not_allowed");
    }
  }
  const form = await handler(postForm({ message: "x" }, { origin: "https://evil.example" }), PEER);
  assert.equal(form.status, 403);
  assert.equal(await form.text(), "This site may not send messages here.\n");
  // None of the 10 refusals used the client's quota, and nothing was sent or stored.
  assert.equal(state.texts.length, 0);
  for (let i = 0; i < 5; i++) {
    assert.equal((await handler(post({ message: `m${i}` }, { origin: SITE }), PEER)).status, 200);
  }
  assert.ok(state.logs.some((log) => log.result === "origin_not_allowed" && log.status === 403));
});

Deno.test("ALLOWED_ORIGINS set: a POST without Origin is served without CORS headers", async () => {
  const { handler } = setup({ allowedOrigins: [SITE] });
  const response = await handler(post({ message: "hi" }), PEER);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("access-control-allow-origin"), null);
  assert.equal(response.headers.get("vary"), "Origin");
});

Deno.test("ALLOWED_ORIGINS set: OPTIONS /api/contact answers the preflight without counting", async () => {
  const { state, handler } = setup({ allowedOrigins: [SITE] });
  for (let i = 0; i < 8; i++) {
    const response = await handler(
      new Request("http://localhost/api/contact", {
        method: "OPTIONS",
        headers: { origin: SITE, "access-control-request-method": "POST" },
      }),
      PEER,
    );
    assert.equal(response.status, 204);
    assert.equal(response.headers.get("access-control-allow-methods"), "POST");
  }
  assert.equal((await handler(post({ message: "hi" }, { origin: SITE }), PEER)).status, 200);
  assert.equal(state.lines.length, 1);
  const refused = await handler(
    new Request("http://localhost/api/contact", {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    }),
    PEER,
  );
  assert.equal(refused.status, 403);
  assert.ok(
    state.logs.some((log) =>
      log.event === "preflight" && log.status === 403 && log.origin === "https://evil.example"
    ),
  );
});

Deno.test("GET / serves the example page only when it was given (SERVE_EXAMPLE=1)", async () => {
  const page = new TextEncoder().encode("<!doctype html><title>x</title>");
  const { handler } = setup({ examplePage: page });
  const response = await handler(new Request("http://localhost/"), PEER);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/html; charset=utf-8");
  assert.match(response.headers.get("content-security-policy")!, /connect-src 'self'/);
  assert.equal(await response.text(), "<!doctype html><title>x</title>");
  const head = await handler(new Request("http://localhost/", { method: "HEAD" }), PEER);
  assert.equal(head.status, 200);
  assert.equal(await head.text(), "");
  const postRoot = await handler(new Request("http://localhost/", { method: "POST" }), PEER);
  assert.equal(postRoot.status, 405);
  const off = await setup().handler(new Request("http://localhost/"), PEER);
  assert.equal(off.status, 404);
  const proto = await setup().handler(new Request("http://localhost/__proto__"), PEER);
  assert.equal(proto.status, 404);
});

Deno.test("an unexpected error during a urlencoded POST answers 500 in plain text", async () => {
  const { handler } = setup({ deliver: () => Promise.reject(new Error("boom")) });
  const response = await handler(postForm({ message: "m", _redirect_error: "/sorry" }), PEER);
  assert.equal(response.status, 500);
  assert.equal(response.headers.get("content-type"), "text/plain; charset=utf-8");
  assert.equal(await response.text(), "Something went wrong; your message was not accepted.\n");
});
