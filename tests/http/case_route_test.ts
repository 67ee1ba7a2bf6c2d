import assert from "node:assert/strict";
import { CaseBook } from "../../lib/cases/case_book.ts";
import { escapeHtml, SENT_NOTICE } from "../../lib/cases/page.ts";
import { casePath, newToken } from "../../lib/cases/token.ts";
import { caseTarget } from "../../lib/http/answer.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { openTempStore } from "../support/temp_store.ts";
import { PEER, post, postForm, setup } from "../support/handler_setup.ts";

async function withCases(
  test: (
    context: ReturnType<typeof setup> & {
      book: CaseBook;
      store: Awaited<ReturnType<typeof openTempStore>>;
    },
  ) => Promise<void>,
  options: Parameters<typeof setup>[0] = {},
): Promise<void> {
  await using store = await openTempStore();
  const book = new CaseBook(store);
  await test({ ...setup({ ...options, cases: book, commitWith: store }), book, store });
}

const get = (path: string, ip = "198.51.100.1") =>
  new Request(`http://localhost${path}`, { headers: { "x-forwarded-for": ip } });

const writeBack = (path: string, fields: Record<string, string>, ip = "198.51.100.1") =>
  new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": ip },
    body: new URLSearchParams(fields).toString(),
  });

Deno.test("an accepted JSON submission answers its case page's path as case_url, and the page shows the message", async () => {
  await withCases(async ({ handler }) => {
    const response = await handler(post({ message: "<b>hi</b> & bye" }), PEER);
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.ok, true);
    assert.match(body.case_url, /^\/api\/case\/[A-Za-z0-9_-]{32}$/);
    const page = await handler(get(body.case_url), PEER);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(page.headers.get("cache-control"), "no-store");
    assert.equal(page.headers.get("referrer-policy"), "no-referrer");
    assert.match(page.headers.get("x-robots-tag")!, /noindex/);
    assert.match(page.headers.get("content-security-policy")!, /default-src 'none'/);
    const html = await page.text();
    assert.ok(html.includes(escapeHtml("<b>hi</b> & bye")));
    assert.ok(!html.includes("<b>hi"));
  });
});

Deno.test("an unknown, wrong or malformed token gets the same plain 404 as any unknown path", async () => {
  await withCases(async ({ handler }) => {
    const body = await (await handler(post({ message: "hi" }), PEER)).json();
    const token = body.case_url.slice("/api/case/".length);
    const unknown = await (await handler(get("/api/nothing-here"), PEER)).text();
    for (
      const path of [
        casePath(newToken()),
        casePath(`${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`),
        `${body.case_url}/`,
        "/api/case/",
        "/api/case/..%2fcontact",
      ]
    ) {
      const response = await handler(get(path), PEER);
      assert.equal(response.status, 404, path);
      assert.equal(await response.text(), unknown, path);
    }
  });
});

Deno.test("a honeypot hit gets a case_url too, whose page reads like a real one: it looks like any success", async () => {
  await withCases(async ({ handler, state, store }) => {
    const response = await handler(post({ message: "<b>spam</b>", website: "x" }), PEER);
    const body = await response.json();
    assert.match(body.case_url, /^\/api\/case\/[A-Za-z0-9_-]{32}$/);
    const page = await handler(get(body.case_url), PEER);
    assert.equal(page.status, 200);
    assert.ok((await page.text()).includes(escapeHtml("<b>spam</b>")), "its own message, escaped");
    assert.equal(state.outbox.length, 0);
    assert.equal(state.lines.length, 0);
    assert.equal(await store.run("cases.prune", { before: "9999-01-01T00:00:00Z" }), 0, "no row");
  });
});

Deno.test("a no-JavaScript post goes to the case page (sent), or to the site's thanks page with the case in the fragment", async () => {
  await withCases(async ({ handler }) => {
    const own = await handler(postForm({ message: "hi" }), PEER);
    assert.equal(own.status, 303);
    const location = own.headers.get("location")!;
    assert.match(location, /^\/api\/case\/[A-Za-z0-9_-]{32}\?sent=1$/);
    const page = await (await handler(get(location), PEER)).text();
    assert.ok(page.includes(escapeHtml(SENT_NOTICE)));

    const thanks = await handler(postForm({ message: "hi", _redirect: "/thanks" }), PEER);
    assert.match(thanks.headers.get("location")!, /^\/thanks#case=\/api\/case\/[A-Za-z0-9_-]{32}$/);
  });
  assert.equal(caseTarget("/thanks#top", "/api/case/x"), "/thanks#top&case=/api/case/x");
});

Deno.test("writing back goes through the submission's road: outbox, queue, and a 303 back to the page, which shows it", async () => {
  await withCases(async ({ handler, state, book }) => {
    const { case_url } = await (await handler(post({ message: "first" }), PEER)).json();
    const response = await handler(writeBack(case_url, { message: "<i>more</i>" }), PEER);
    assert.equal(response.status, 303);
    assert.equal(response.headers.get("location"), `${case_url}?sent=1`);
    assert.equal(state.outbox.length, 2);
    assert.equal(state.outbox[1]!.message, "<i>more</i>");
    assert.equal(state.outbox[1]!.contact, "");
    assert.equal(state.lines.length, 2, "a backup record");
    const found = await book.find(case_url);
    assert.deepEqual(found?.posts.map((p) => p.text), ["first", "<i>more</i>"]);
    assert.equal(await book.caseOf(state.outbox[1]!.id), found?.id);
    const html = await (await handler(get(case_url), PEER)).text();
    assert.ok(html.includes("&lt;i&gt;more&lt;/i&gt;"));
  });
});

Deno.test("writing back obeys the honeypot and the rate limit, and an empty message is refused back on the page", async () => {
  await withCases(async ({ handler, state }) => {
    const { case_url } = await (await handler(post({ message: "first" }), PEER)).json();
    const hp = await handler(writeBack(case_url, { message: "x", website: "bot" }), PEER);
    assert.equal(hp.status, 303);
    assert.equal(state.outbox.length, 1, "the honeypot hit is not queued");
    const empty = await handler(writeBack(case_url, { message: "" }), PEER);
    assert.equal(empty.status, 303);
    assert.match(empty.headers.get("location")!, /\?error=/);
    let last: Response | undefined;
    for (let i = 0; i < 10; i++) {
      last = await handler(writeBack(case_url, { message: `m${i}` }), PEER);
    }
    assert.equal(last!.status, 303);
    assert.match(last!.headers.get("location")!, /\?error=rate_limited$/);
    const page = await (await handler(get(last!.headers.get("location")!), PEER)).text();
    assert.ok(page.includes("Too many messages"));
  });
});

Deno.test("a case closed by Handled takes no more writing; reading still works", async () => {
  await withCases(async ({ handler, state, store }) => {
    const { case_url } = await (await handler(post({ message: "first" }), PEER)).json();
    const id = state.outbox[0]!.id;
    await store.run("ledger.noteSent", {
      id,
      ts: state.outbox[0]!.ts,
      chat: 1,
      messageId: 5,
      first: true,
      ip: "198.51.100.1",
      contact: "",
    });
    await store.run("ledger.setState", { id, state: "handled", by: 1, byName: "O", at: "x" });
    const response = await handler(writeBack(case_url, { message: "more" }), PEER);
    assert.equal(response.headers.get("location"), `${case_url}?error=case_closed`);
    assert.equal(state.outbox.length, 1);
    const html = await (await handler(get(response.headers.get("location")!), PEER)).text();
    assert.ok(!html.includes("<form"));
    assert.ok(html.includes("closed"));
  });
});

Deno.test("page reads are rate-limited per address, apart from posting", async () => {
  await withCases(async ({ handler }) => {
    const { case_url } = await (await handler(post({ message: "first" }), PEER)).json();
    assert.equal((await handler(get(case_url), PEER)).status, 200);
    assert.equal((await handler(get(case_url), PEER)).status, 200);
    const refused = await handler(get(case_url), PEER);
    assert.equal(refused.status, 429);
    assert.ok(refused.headers.has("retry-after"));
    assert.equal((await handler(get(case_url, "198.51.100.2"), PEER)).status, 200);
  }, { caseLimiter: new RateLimiter({ limit: 2, windowMs: 60_000, maxEntries: 100 }) });
});

Deno.test("without cases there is no case route and successes carry no case_url", async () => {
  const { handler } = setup();
  const body = await (await handler(post({ message: "hi" }), PEER)).json();
  assert.deepEqual(body, { ok: true });
  assert.equal((await handler(get(casePath(newToken())), PEER)).status, 404);
});

Deno.test("guessing case pages is tallied, not logged one line each", async () => {
  const { isRefusal } = await import("../../lib/log/tally.ts");
  await withCases(async ({ handler, state }) => {
    for (let i = 0; i < 3; i++) await handler(get(casePath(newToken())), PEER);
    const lines = state.logs.filter((line) => line.result === "case_not_found");
    assert.equal(lines.length, 3);
    assert.ok(lines.every((line) => isRefusal(line)));
  });
});
