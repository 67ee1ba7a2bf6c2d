/**
 * The `case_url` of a honeypot hit or a blocked sender is a decoy's page (lib/cases/decoy.ts):
 * read, after a script's post or a form's redirect, and written to, it answers as a real case's
 * page does, byte for byte but for its own path; and nothing written there is queued, recorded,
 * sent to the chat or stored.
 *
 * @module
 */
import assert from "node:assert/strict";
import { CaseBook } from "../../lib/cases/case_book.ts";
import { escapeHtml, SENT_NOTICE } from "../../lib/cases/page.ts";
import { MAX_UNANSWERED } from "../../lib/cases/waiting.ts";
import { BlockList, spamBlocks } from "../../lib/spam/block_list.ts";
import { failingStore, openTempStore } from "../support/temp_store.ts";
import { PEER, post, postForm, setup } from "../support/handler_setup.ts";

type World = ReturnType<typeof setup> & { store: Awaited<ReturnType<typeof openTempStore>> };

async function withCases(
  test: (world: World) => Promise<void>,
  options: Parameters<typeof setup>[0] = {},
): Promise<void> {
  await using store = await openTempStore();
  await test({ ...setup({ ...options, cases: new CaseBook(store), commitWith: store }), store });
}

/** A fresh client address each call: the submissions' rate limit is per address. */
let addresses = 0;
const fresh = () => `203.0.${Math.floor(++addresses / 250)}.${(addresses % 250) + 1}`;

const read = (path: string, method = "GET") =>
  new Request(`http://localhost${path}`, { method, headers: { "x-forwarded-for": fresh() } });

const formWriteBack = (path: string, fields: Record<string, string>) =>
  new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": fresh() },
    body: new URLSearchParams(fields).toString(),
  });

const jsonWriteBack = (path: string, fields: Record<string, string>) =>
  new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": fresh() },
    body: JSON.stringify(fields),
  });

/** Status, every header and the body of an answer, its page's own path written `<page>`. */
async function exactly(response: Response, path: string) {
  const own = (text: string) => text.replaceAll(path, "<page>");
  return {
    status: response.status,
    headers: [...response.headers].map(([name, value]) => [name, own(value)]),
    body: own(await response.text()),
  };
}

/** What reaches the chat, the outbox, the backup file and the cases' rows. */
async function traces({ state, store }: World) {
  const rows = await store.run("cases.count", { ids: state.outbox.map(({ id }) => id) });
  return { sent: state.texts.length, outbox: state.outbox.length, lines: state.lines.length, rows };
}

Deno.test("a honeypot hit's decoy page is a real page byte for byte, headers included, but for its path: the sender's own message, escaped", async () => {
  await withCases(async ({ handler }) => {
    const message = "<script>alert(1)</script> & hello";
    const real = (await (await handler(post({ message }, {}, fresh()), PEER)).json()).case_url;
    const decoy =
      (await (await handler(post({ message, website: "x" }, {}, fresh()), PEER)).json()).case_url;
    for (const query of ["", "?sent=1", "?error=field_required"]) {
      for (const method of ["GET", "HEAD"]) {
        const page = await exactly(await handler(read(real + query, method), PEER), real);
        const seen = await exactly(await handler(read(decoy + query, method), PEER), decoy);
        assert.deepEqual(seen, page, `${method} ${query}`);
      }
    }
    const html = await (await handler(read(decoy), PEER)).text();
    assert.ok(html.includes(escapeHtml(message)) && !html.includes("<script>"));
  });
});

Deno.test("a honeypot form post without JavaScript goes to its decoy page, which says it was sent, as a real post goes to its case page", async () => {
  await withCases(async ({ handler }) => {
    const realPost = await handler(postForm({ message: "hi" }, {}, fresh()), PEER);
    const decoyPost = await handler(postForm({ message: "hi", website: "x" }, {}, fresh()), PEER);
    const at = (response: Response) => response.headers.get("location")!.replace(/\?.*$/, "");
    const [real, decoy] = [at(realPost), at(decoyPost)];
    assert.match(decoyPost.headers.get("location")!, /^\/api\/case\/[A-Za-z0-9_-]{32}\?sent=1$/);
    assert.deepEqual(await exactly(decoyPost, decoy), await exactly(realPost, real));
    const page = await handler(read(decoyPost.headers.get("location")!), PEER);
    const seen = await exactly(page, decoy);
    assert.equal(seen.status, 200);
    assert.ok(seen.body.includes(escapeHtml(SENT_NOTICE)) && seen.body.includes(">hi<"));
    const realPage = await handler(read(realPost.headers.get("location")!), PEER);
    assert.deepEqual(seen, await exactly(realPage, real));
  });
});

Deno.test("writing back to a decoy page is answered as on a real case's, and shown there, and reaches nobody: nothing sent, queued, recorded or stored", async () => {
  await withCases(async (world) => {
    const { handler } = world;
    const real = (await (await handler(post({ message: "hi" }, {}, fresh()), PEER)).json())
      .case_url;
    const decoy =
      (await (await handler(post({ message: "hi", website: "x" }, {}, fresh()), PEER)).json())
        .case_url;
    /** Sends `made` to both pages: the answers match, and the decoy's leaves no trace. */
    const both = async (made: (path: string) => Request, what: string) => {
      const answer = await exactly(await handler(made(real), PEER), real);
      const before = await traces(world);
      const seen = await exactly(await handler(made(decoy), PEER), decoy);
      assert.deepEqual(await traces(world), before, `${what}: the decoy's leaves no trace`);
      assert.deepEqual(seen, answer, what);
      return seen;
    };
    const sent = await both((path) => formWriteBack(path, { message: "<i>more</i>" }), "form");
    assert.equal(sent.status, 303);
    assert.equal(sent.headers.find(([name]) => name === "location")?.[1], "<page>?sent=1");
    assert.equal(
      (await both((path) => jsonWriteBack(path, { message: "json" }), "json")).status,
      200,
    );
    await both((path) => formWriteBack(path, { message: "" }), "an empty message");
    await both((path) => jsonWriteBack(path, { message: "x", website: "x" }), "the honeypot");
    // Posts 4 to the cap of unanswered messages, and past it: case_waiting on both.
    for (let i = 4; i <= MAX_UNANSWERED + 1; i++) {
      await both((path) => formWriteBack(path, { message: `more ${i}` }), `post ${i}`);
    }
    const waiting = await both((path) => jsonWriteBack(path, { message: "more" }), "the cap");
    assert.equal(waiting.status, 429);
    const page = await both((path) => read(path), "the page after");
    assert.ok(page.body.includes(escapeHtml("<i>more</i>")) && page.body.includes("more 10"));
    assert.equal(world.state.texts.length, MAX_UNANSWERED, "only the real case's reached the chat");
  });
});

/** A case book whose `find` holds, once `hold` is called, until `n` finds have arrived. */
class RacingBook extends CaseBook {
  #gate: { n: number; arrived: number; all: PromiseWithResolvers<void> } | undefined;
  hold(n: number): void {
    this.#gate = { n, arrived: 0, all: Promise.withResolvers() };
  }
  override async find(path: string) {
    const found = await super.find(path);
    const gate = this.#gate;
    if (gate !== undefined) {
      if (++gate.arrived === gate.n) gate.all.resolve();
      await gate.all.promise;
    }
    return found;
  }
}

Deno.test("write-backs racing past the route's check to a decoy page's cap are refused as a real case's are (429 case_waiting): the page takes no more than a real one", async () => {
  await using store = await openTempStore();
  const book = new RacingBook(store);
  const { handler } = setup({ cases: book, commitWith: store });
  const decoy =
    (await (await handler(post({ message: "hi", website: "x" }, {}, fresh()), PEER)).json())
      .case_url;
  for (let i = 2; i < MAX_UNANSWERED; i++) {
    assert.equal((await handler(jsonWriteBack(decoy, { message: `m${i}` }), PEER)).status, 200);
  }
  // One short of the cap: both have found the page (and passed the route's check) before either
  // is shown.
  book.hold(2);
  const racing = await Promise.all(
    [1, 2].map(async () => (await handler(jsonWriteBack(decoy, { message: "r" }), PEER))),
  );
  const answers = await Promise.all(racing.map(async (r) => [r.status, await r.json()]));
  assert.deepEqual(answers.map(([status]) => status).sort(), [200, 429]);
  assert.equal(answers.find(([status]) => status === 429)![1].error, "case_waiting");
  book.hold(1);
  const page = await (await handler(read(decoy), PEER)).text();
  assert.equal(page.split('<div class="post sender">').length - 1, MAX_UNANSWERED);
});

Deno.test("a blocked sender's case_url is a decoy page showing its message; what it writes back there reaches nobody", async () => {
  const now = Date.parse("2026-11-22T14:03:09.500Z");
  const spammer = { id: "s1", ip: "198.51.100.9", contact: "spam@example.org" };
  await withCases(async (world) => {
    const { handler, state } = world;
    const held = await handler(
      post({ message: "buy <now>", contact: spammer.contact }, {}, spammer.ip),
      PEER,
    );
    assert.equal(held.status, 200);
    const { case_url } = await held.json();
    assert.deepEqual(await traces(world), { sent: 0, outbox: 0, lines: 1, rows: 0 }, "held");
    const page = await handler(read(case_url), PEER);
    assert.equal(page.status, 200);
    assert.ok((await page.text()).includes(escapeHtml("buy <now>")));
    const back = await handler(formWriteBack(case_url, { message: "still there?" }), PEER);
    assert.equal(back.headers.get("location"), `${case_url}?sent=1`);
    assert.ok((await (await handler(read(case_url), PEER)).text()).includes("still there?"));
    assert.deepEqual(await traces(world), { sent: 0, outbox: 0, lines: 1, rows: 0 });
    assert.equal(state.logs.filter((line) => line.result === "decoy_follow_up").length, 1);
  }, { blocks: new BlockList(spamBlocks(spammer, now - 1000, 86_400_000)) });
});

Deno.test("a decoy that cannot be made (its key unread) is logged decoy_failed, and the bot is still answered a success with a case_url", async () => {
  await using store = await openTempStore();
  let failing = true;
  const broken = failingStore(store, (op) => op === "meta.get", () => failing);
  const { handler, state } = setup({ cases: new CaseBook(broken), commitWith: store });
  const hit = await handler(post({ message: "bot", website: "x" }, {}, fresh()), PEER);
  assert.equal(hit.status, 200);
  assert.match((await hit.json()).case_url, /^\/api\/case\/[A-Za-z0-9_-]{32}$/);
  assert.equal(state.logs.filter((line) => line.event === "decoy_failed").length, 1);
  failing = false;
  const again = await handler(post({ message: "bot", website: "x" }, {}, fresh()), PEER);
  const page = await handler(read((await again.json()).case_url), PEER);
  assert.equal(page.status, 200, "the key is read again once the store works");
});
