/**
 * Attacks on the case pages (issue 33) through the real handler over a real database: guessing
 * tokens, telling unknown tokens apart, writing to erased, expired or reopened cases, and what a
 * follow-up can carry. Each test is named as the rule that must hold.
 *
 * @module
 */
import assert from "node:assert/strict";
import { CaseBook, keptCases } from "../../lib/cases/case_book.ts";
import { MAX_UNANSWERED } from "../../lib/cases/waiting.ts";
import { casePath, newToken } from "../../lib/cases/token.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { openSpool } from "../../lib/files/spool.ts";
import type { FileKind } from "../../lib/files/sniff.ts";
import { openTempStore } from "../support/temp_store.ts";
import { PEER, post, setup } from "../support/handler_setup.ts";

type Context = ReturnType<typeof setup> & {
  book: CaseBook;
  store: Awaited<ReturnType<typeof openTempStore>>;
};

async function withCases(
  test: (context: Context) => Promise<void>,
  options: Parameters<typeof setup>[0] = {},
): Promise<void> {
  await using store = await openTempStore();
  const book = new CaseBook(store);
  await test({ ...setup({ ...options, cases: book, commitWith: store }), book, store });
}

const request = (path: string, method = "GET", ip = "198.51.100.1") =>
  new Request(`http://localhost${path}`, {
    method,
    headers: {
      "x-forwarded-for": ip,
      ...(method === "POST" ? { "content-type": "application/x-www-form-urlencoded" } : {}),
    },
    ...(method === "POST" ? { body: "message=hello" } : {}),
  });

const writeBack = (path: string, fields: Record<string, string>, ip = "198.51.100.1") =>
  new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": ip },
    body: new URLSearchParams(fields).toString(),
  });

/** Status, every header and the body's bytes of an answer, to compare answers exactly. */
async function exactly(response: Response) {
  return {
    status: response.status,
    headers: [...response.headers],
    body: [...new Uint8Array(await response.arrayBuffer())],
  };
}

/** Opens a case through the handler; its path and submission id. */
async function openCase({ handler, state }: Context, message = "first") {
  const { case_url } = await (await handler(post({ message }), PEER)).json();
  return { caseUrl: case_url as string, id: state.outbox.at(-1)!.id };
}

/** The notification of `id` noted as sent (as the send queue does). */
function noteSent(store: Context["store"], id: string, ts: string, messageId = 5) {
  return store.run("ledger.noteSent", {
    id,
    ts,
    chat: 1,
    messageId,
    first: true,
    ip: "198.51.100.1",
    contact: "",
  });
}

/** The notification of `id` marked `to`, as the chat's buttons (and their undo) do. */
function mark(store: Context["store"], id: string, to: "open" | "handled" | "spam") {
  return store.run("ledger.setState", { id, state: to, by: 1, byName: "O", at: "x" });
}

Deno.test("guessing tokens by POST spends the page-read budget per address: no unlimited guesses", async () => {
  await withCases(async ({ handler }) => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await handler(request(casePath(newToken()), "POST"), PEER);
      await response.body?.cancel();
      statuses.push(response.status);
    }
    assert.deepEqual(statuses, [404, 404, 404, 429]);
  }, { caseLimiter: new RateLimiter({ limit: 3, windowMs: 60_000, maxEntries: 100 }) });
});

Deno.test("an unknown, malformed, erased or expired token answers byte for byte what any unknown path answers, headers included, for GET, HEAD and POST", async () => {
  await withCases(async (context) => {
    const { handler, store } = context;
    const erased = await openCase(context, "erase me");
    const expired = await openCase(context, "expire me");
    await keptCases(store).forget!({ by: "id", value: erased.id }, new Set([erased.id]), false);
    await store.run("cases.prune", { before: "9999-01-01T00:00:00Z" });
    const paths = [
      casePath(newToken()),
      `${casePath(newToken())}x`,
      "/api/case/%3Cscript%3E",
      erased.caseUrl,
      expired.caseUrl,
    ];
    for (const method of ["GET", "HEAD", "POST"]) {
      const unknown = await exactly(await handler(request("/api/nothing-here", method), PEER));
      for (const path of paths) {
        const answer = await exactly(await handler(request(path, method), PEER));
        assert.deepEqual(answer, unknown, `${method} ${path}`);
      }
    }
  });
});

Deno.test("a follow-up to an erased or expired case is refused 404: nothing is queued, recorded or posted", async () => {
  await withCases(async (context) => {
    const { handler, state, store } = context;
    const erased = await openCase(context);
    const expired = await openCase(context);
    await keptCases(store).forget!({ by: "id", value: erased.id }, new Set([erased.id]), false);
    await store.run("cases.prune", { before: "9999-01-01T00:00:00Z" });
    const before = { outbox: state.outbox.length, lines: state.lines.length };
    for (const { caseUrl } of [erased, expired]) {
      const response = await handler(writeBack(caseUrl, { message: "still there?" }), PEER);
      await response.body?.cancel();
      assert.equal(response.status, 404);
    }
    assert.deepEqual({ outbox: state.outbox.length, lines: state.lines.length }, before);
    assert.equal(await store.run("cases.ofPost", { ref: "id000003" }), undefined);
  });
});

Deno.test("a case closed by Spam takes no writing, and the undo (Not spam, Reopen) opens it again", async () => {
  await withCases(async (context) => {
    const { handler, state, store } = context;
    const { caseUrl, id } = await openCase(context);
    await noteSent(store, id, state.outbox[0]!.ts);
    for (const closed of ["spam", "handled"] as const) {
      await mark(store, id, closed);
      const refused = await handler(writeBack(caseUrl, { message: `after ${closed}` }), PEER);
      assert.equal(refused.headers.get("location"), `${caseUrl}?error=case_closed`, closed);
      assert.equal(state.outbox.length, 1, closed);
      await mark(store, id, "open");
    }
    const reopened = await handler(writeBack(caseUrl, { message: "after the undo" }), PEER);
    assert.equal(reopened.headers.get("location"), `${caseUrl}?sent=1`);
    assert.equal(state.outbox.at(-1)!.message, "after the undo");
  });
});

Deno.test("a honeypot hit's case_url cannot be told from a real one by reading it", {
  // Found by attack: a decoy case_url (honeypot, blocked sender) was a token of no case, a 404
  // where a real one is 200; it is now a decoy's page (lib/cases/decoy.ts) that reads like one.
}, async () => {
  await withCases(async ({ handler }) => {
    const real = (await (await handler(post({ message: "real" }), PEER)).json()).case_url;
    const decoy =
      (await (await handler(post({ message: "bot", website: "x" }), PEER)).json()).case_url;
    const read = async (path: string) => (await handler(request(path), PEER)).status;
    assert.equal(await read(decoy), await read(real));
  });
});

Deno.test(
  "a follow-up carries only what the page's form sends: no contact, name or fields of its own",
  {
    // Found by attack: a crafted POST to /api/case/<token> took any submission field (contact,
    // name, extra fields); a follow-up now keeps its message alone (lib/http/contact.ts).
  },
  async () => {
    await withCases(async (context) => {
      const { handler, state } = context;
      const { caseUrl } = await openCase(context);
      const response = await handler(
        writeBack(caseUrl, {
          message: "more",
          contact: "victim@example.com",
          name: "Someone Else",
          company: "x",
        }),
        PEER,
      );
      assert.equal(response.status, 303);
      const followUp = state.outbox.at(-1)!;
      assert.equal(followUp.message, "more");
      assert.equal(followUp.contact, "");
      assert.equal(followUp.name ?? "", "");
      assert.deepEqual(followUp.fields ?? {}, {});
    });
  },
);

Deno.test("a follow-up posted as multipart (files on) goes back to its page like any write-back, whatever _redirect it names", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const spool = await openSpool(`${dir}/m.jsonl.files`);
    await withCases(async (context) => {
      const { handler } = context;
      const { caseUrl } = await openCase(context);
      const multipart = (fields: [string, string][]) => {
        const form = new FormData();
        for (const [name, value] of fields) form.append(name, value);
        return new Request(`http://localhost${caseUrl}`, {
          method: "POST",
          headers: { "x-forwarded-for": "198.51.100.1" },
          body: form,
        });
      };
      const sent = await handler(multipart([["message", "more"], ["_redirect", "/x"]]), PEER);
      assert.equal(sent.status, 303);
      assert.equal(sent.headers.get("location"), `${caseUrl}?sent=1`);
      const refused = await handler(multipart([["message", ""], ["_redirect_error", "/y"]]), PEER);
      assert.equal(refused.status, 303);
      assert.match(refused.headers.get("location")!, new RegExp(`^${caseUrl}\\?error=`));
    }, { attachments: { maxBytes: 1_000_000, kinds: new Set<FileKind>(["pdf"]), spool } });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Spam on a follow-up's notification closes its case for writing, from any address; Not spam opens it again", async () => {
  await withCases(async (context) => {
    const { handler, state, store } = context;
    const { caseUrl } = await openCase(context);
    const sent = await handler(writeBack(caseUrl, { message: "abuse" }), PEER);
    assert.equal(sent.headers.get("location"), `${caseUrl}?sent=1`);
    const followUp = state.outbox.at(-1)!;
    await noteSent(store, followUp.id, followUp.ts, 6);
    await mark(store, followUp.id, "spam");
    // The sender's address is blocked by Spam; another one must not carry on the abuse.
    const other = await handler(writeBack(caseUrl, { message: "more" }, "203.0.113.9"), PEER);
    assert.equal(other.headers.get("location"), `${caseUrl}?error=case_closed`);
    assert.equal(state.outbox.length, 2);
    await mark(store, followUp.id, "open");
    const again = await handler(writeBack(caseUrl, { message: "sorry" }, "203.0.113.9"), PEER);
    assert.equal(again.headers.get("location"), `${caseUrl}?sent=1`);
  });
});

Deno.test("a script writing to a closed case gets 409 case_closed in JSON, as the docs say; a form post a 303 back to the page", async () => {
  await withCases(async (context) => {
    const { handler, state, store } = context;
    const { caseUrl, id } = await openCase(context);
    await noteSent(store, id, state.outbox[0]!.ts);
    await mark(store, id, "handled");
    const json = await handler(
      new Request(`http://localhost${caseUrl}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.1" },
        body: JSON.stringify({ message: "more" }),
      }),
      PEER,
    );
    assert.equal(json.status, 409);
    assert.equal((await json.json()).error, "case_closed");
    const asks = new Request(`http://localhost${caseUrl}`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
        "x-forwarded-for": "198.51.100.1",
      },
      body: "message=more",
    });
    assert.equal((await handler(asks, PEER)).status, 409);
    const page = await handler(writeBack(caseUrl, { message: "more" }), PEER);
    assert.equal(page.status, 303);
    assert.equal(page.headers.get("location"), `${caseUrl}?error=case_closed`);
    assert.equal(state.outbox.length, 1);
  });
});

Deno.test(
  "one case takes a bounded number of follow-ups the owner has not answered, whatever addresses they come from",
  {
    // Found by attack: a follow-up passes the per-address rate limit only, and no challenge; one
    // token let a bot with many addresses post without end. A case now takes MAX_UNANSWERED (10)
    // of the sender's messages in a row (lib/cases/waiting.ts), then 429 case_waiting.
  },
  async () => {
    await withCases(async (context) => {
      const { handler, state } = context;
      const { caseUrl } = await openCase(context);
      for (let i = 0; i < 100; i++) {
        const ip = `203.0.${Math.floor(i / 200)}.${(i % 200) + 1}`;
        await (await handler(writeBack(caseUrl, { message: `flood ${i}` }, ip), PEER)).body
          ?.cancel();
      }
      assert.equal(state.outbox.length, MAX_UNANSWERED, "the first message and 9 follow-ups");
    });
  },
);

/** A case book whose next `find` lets `race` commit first: another post won the race. */
class RacedBook extends CaseBook {
  race: (() => Promise<unknown>) | undefined;

  override async find(path: string) {
    const found = await super.find(path);
    const race = this.race;
    this.race = undefined;
    await race?.();
    return found;
  }
}

/** `withCases` over a {@linkcode RacedBook}. */
async function withRacedCases(
  test: (context: Omit<Context, "book"> & { book: RacedBook }) => Promise<void>,
): Promise<void> {
  await using store = await openTempStore();
  const book = new RacedBook(store);
  await test({ ...setup({ cases: book, commitWith: store }), book, store });
}

const writeBackJson = (path: string, ip: string) =>
  new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": ip },
    body: JSON.stringify({ message: "one more" }),
  });

Deno.test("a follow-up racing past the page's check to a case's cap is refused as that check refuses it (429 case_waiting): nothing queued, recorded or posted", async () => {
  await withRacedCases(async (context) => {
    const { handler, state, book, store } = context;
    const posts = [
      (path: string, ip: string) => writeBack(path, { message: "one more" }, ip),
      writeBackJson,
    ];
    let ips = 0;
    const ip = () => `203.0.113.${++ips}`;
    for (const made of posts) {
      const { caseUrl, id } = await openCase({ ...context, book });
      for (let i = 1; i < MAX_UNANSWERED - 1; i++) {
        const response = await handler(writeBack(caseUrl, { message: `f${i}` }, ip()), PEER);
        assert.equal(response.headers.get("location"), `${caseUrl}?sent=1`);
      }
      const before = { outbox: state.outbox.length, lines: state.lines.length };
      // One more fits by the page's check; another post commits meanwhile and fills the case.
      book.race = () =>
        store.run("cases.followUp", {
          caseId: id,
          ref: `racer of ${id}`,
          ts: "2026-11-22T14:03:10Z",
          author: "sender",
          text: "the racing post",
          max: MAX_UNANSWERED,
        });
      const raced = await exactly(await handler(made(caseUrl, ip()), PEER));
      assert.equal(book.race, undefined, "the race was run");
      const checked = await exactly(await handler(made(caseUrl, ip()), PEER)); // the page's check
      assert.equal(raced.status, made === writeBackJson ? 429 : 303);
      assert.deepEqual(raced, checked);
      assert.deepEqual({ outbox: state.outbox.length, lines: state.lines.length }, before);
      const posted = await store.run("cases.get", { id });
      assert.equal(posted?.posts.length, MAX_UNANSWERED);
      assert.equal(posted?.posts.at(-1)?.text, "the racing post");
    }
    assert.equal(state.texts.length, state.outbox.length, "nothing refused was sent");
    assert.ok(!state.logs.some((line) => line.level === "error"), JSON.stringify(state.logs));
  });
});

Deno.test("a follow-up whose case is erased between the page's check and its commit gets the 404 of any unknown page: nothing queued, recorded or posted", async () => {
  await withRacedCases(async (context) => {
    const { handler, state, book, store } = context;
    const unknown = await exactly(await handler(request("/api/nothing-here", "POST"), PEER));
    const posts = [
      (path: string) => writeBack(path, { message: "still there?" }),
      (path: string) => writeBackJson(path, "198.51.100.1"),
    ];
    for (const made of posts) {
      const { caseUrl, id } = await openCase({ ...context, book });
      const before = { outbox: state.outbox.length, lines: state.lines.length };
      book.race = () => keptCases(store).forget!({ by: "id", value: id }, new Set([id]), false);
      assert.deepEqual(await exactly(await handler(made(caseUrl), PEER)), unknown);
      assert.deepEqual({ outbox: state.outbox.length, lines: state.lines.length }, before);
      assert.equal(await store.run("cases.get", { id }), undefined);
    }
    assert.equal(state.texts.length, 2, "only the two cases' own messages were sent");
    assert.ok(!state.logs.some((line) => line.level === "error"), JSON.stringify(state.logs));
  });
});

Deno.test(
  "a message saved for later delivery (502 stored) either tells the sender its case page or opens none",
  {
    // Found by attack: a `502 delivery_failed` answer with `"stored": true` carried no
    // `case_url`, yet the case was opened: the token was lost. A stored answer names it now.
  },
  async () => {
    await withCases(async ({ handler, state, book }) => {
      const response = await handler(post({ message: "saved for later" }), PEER);
      assert.equal(response.status, 502);
      const body = await response.json();
      assert.equal(body.stored, true);
      const opened = await book.has(state.outbox[0]!.id);
      assert.ok(
        opened ? typeof body.case_url === "string" : body.case_url === undefined,
        "a case was opened whose token nobody was given",
      );
    }, { deliver: () => Promise.resolve({ ok: false, error: "502 bad gateway" }) });
  },
);

Deno.test("the example nginx.conf keeps case tokens out of its access log", {
  // Found by attack: the token is the path (/api/case/<token>), and nginx's default access log
  // writes every path it proxies; examples/nginx.conf gives /api/case/ a block without it.
}, async () => {
  const example = await Deno.readTextFile(
    new URL("../../examples/nginx.conf", import.meta.url),
  );
  const block = /location \^~ \/api\/case\/ \{[^}]*\}/.exec(example)?.[0] ?? "";
  assert.match(block, /access_log off;/);
});
