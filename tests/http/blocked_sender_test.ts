/**
 * What a sender blocked as spam meets: the answer of a honeypot hit (200, the same body or
 * redirect as a success), nothing queued or sent, no outbox line, and its record kept, held, with
 * the block that held it; a bad request is still answered as bad; once unblocked it goes through.
 */
import assert from "node:assert/strict";
import { createHandler, type HandlerDeps } from "../../lib/http/handler.ts";
import { parseCidr } from "../../lib/common/ip.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { postBudget } from "../../lib/http/budgets.ts";
import { parseConfig } from "../../lib/config/config.ts";
import { BlockList, keyOf, spamBlocks } from "../../lib/spam/block_list.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import { PEER, post, postForm } from "../support/handler_setup.ts";

const NOW = Date.parse("2026-11-22T14:03:09.500Z");
const DAY = 86_400_000;
const SPAMMER = { id: "s1", ip: "2001:db8:1:2::7", contact: "spam@example.org" };

/** A handler whose sends, outbox lines, records and logs are kept; `blocks` the list given. */
function blockedWorld(
  blocks: BlockList | undefined,
  append?: (line: string) => Promise<void>,
) {
  const state = {
    sent: [] as OutboxSubmission[],
    outbox: [] as OutboxSubmission[],
    lines: [] as string[],
    logs: [] as LogFields[],
    counted: [] as string[],
  };
  let ids = 0;
  const deps: HandlerDeps = {
    now: () => NOW,
    trustedProxies: [parseCidr("127.0.0.1/8")!],
    limiter: new RateLimiter(postBudget(parseConfig({}).rateLimit)),
    queue: {
      submit: (submission) => (state.sent.push(submission), Promise.resolve({ ok: true })),
    },
    outbox: {
      add: (submission) => (state.outbox.push(submission), Promise.resolve()),
      recordedSoon: () => Promise.resolve(),
    },
    newId: () => `id${String(++ids).padStart(6, "0")}`,
    append: append ?? ((line) => (state.lines.push(line), Promise.resolve())),
    log: (_level, fields) => void state.logs.push(fields),
    count: (what) => void state.counted.push(what),
    bodyDeadline: () => new AbortController().signal,
    ...(blocks === undefined ? {} : { blocks }),
  };
  return { state, handler: createHandler(deps) };
}

function marked(): BlockList {
  return new BlockList(spamBlocks(SPAMMER, NOW - 1000, 30 * DAY));
}

Deno.test("a blocked address is answered 200 like a success, nothing queued or sent, its record held", async () => {
  const { state, handler } = blockedWorld(marked());
  const response = await handler(
    post({ name: "Bot", contact: "", message: "buy" }, {}, "2001:db8:1:2::99"),
    PEER,
  );
  assert.equal(response.status, 200);
  assert.equal(await response.text(), '{"ok":true}');
  assert.deepEqual(state.sent, []);
  assert.deepEqual(state.outbox, []);
  assert.deepEqual(state.lines.map((line) => JSON.parse(line)), [{
    ts: "2026-11-22T14:03:09Z",
    id: "id000001",
    name: "Bot",
    contact: "",
    message: "buy",
    ip: "2001:db8:1:2::99",
    messenger_ok: false,
    messenger_error: "held as spam",
    held: "spam",
    block: "address:2001:db8:1:2::/64",
  }]);
  // Logged as held (tallied with the refusals), with the kind of block but never its key.
  const line = state.logs.find((fields) => fields.result === "held_spam");
  assert.deepEqual(line, {
    event: "contact",
    status: 200,
    result: "held_spam",
    id: "id000001",
    block: "address",
  });
  assert.ok(!JSON.stringify(state.logs).includes("2001:db8"));
  // Counted for /status by an explicit counter, not read back from the log.
  assert.deepEqual(state.counted, ["held_spam"]);
});

Deno.test("a POST the rate limiter refuses is counted for /status, once each", async () => {
  const { state, handler } = blockedWorld(undefined);
  const budget = postBudget(parseConfig({}).rateLimit);
  for (let i = 0; i <= budget.limit; i++) {
    const response = await handler(post({ message: `try ${i}` }, {}, "198.51.100.77"), PEER);
    await response.body?.cancel();
  }
  assert.deepEqual(state.counted, ["rate_limited"]);
});

Deno.test("a blocked contact is held from another address too", async () => {
  const { state, handler } = blockedWorld(marked());
  const response = await handler(
    post({ contact: " spam@example.org ", message: "again" }, {}, "198.51.100.44"),
    PEER,
  );
  assert.equal(response.status, 200);
  assert.deepEqual(state.sent, []);
  assert.equal(JSON.parse(state.lines[0]!).block, "contact:spam@example.org");
  assert.equal(JSON.parse(state.lines[0]!).held, "spam");
});

Deno.test("a held form post gets the same redirect as a delivered one", async () => {
  const { state, handler } = blockedWorld(marked());
  const held = await handler(
    postForm({ message: "x", _redirect: "/thanks.html" }, {}, "2001:db8:1:2::5"),
    PEER,
  );
  const real = await handler(
    postForm({ message: "y", _redirect: "/thanks.html" }, {}, "198.51.100.3"),
    PEER,
  );
  for (const response of [held, real]) {
    assert.equal(response.status, 303);
    assert.equal(response.headers.get("location"), "/thanks.html");
  }
  assert.deepEqual([...held.headers], [...real.headers]);
  assert.equal(state.sent.length, 1);
  assert.equal(state.lines.length, 2);
});

Deno.test("a bad request from a blocked sender is still answered as bad, and nothing is recorded", async () => {
  const { state, handler } = blockedWorld(marked());
  const response = await handler(post({ message: "" }, {}, "2001:db8:1:2::7"), PEER);
  assert.equal(response.status, 400);
  assert.deepEqual(state.lines, []);
});

Deno.test("an unblocked sender goes through again; an unrelated one was never held", async () => {
  const blocks = marked();
  const { state, handler } = blockedWorld(blocks);
  const other = await handler(post({ message: "hi" }, {}, "2001:db8:1:3::7"), PEER);
  assert.equal(other.status, 200);
  assert.equal(state.sent.length, 1);
  blocks.liftKey(keyOf("2001:db8:1:2::7"));
  blocks.liftKey(keyOf(SPAMMER.contact));
  const response = await handler(
    post({ contact: "spam@example.org", message: "sorry" }, {}, "2001:db8:1:2::7"),
    PEER,
  );
  assert.equal(response.status, 200);
  assert.equal(state.sent.length, 2);
  assert.equal(state.outbox.length, 2);
  assert.equal(JSON.parse(state.lines[1]!).held, undefined);
});

Deno.test("an expired block holds nothing; without a block list nothing is held", async () => {
  const expired = new BlockList(spamBlocks(SPAMMER, NOW - 2 * DAY, DAY));
  for (const blocks of [expired, undefined]) {
    const { state, handler } = blockedWorld(blocks);
    const response = await handler(post({ message: "hi" }, {}, SPAMMER.ip), PEER);
    assert.equal(response.status, 200);
    assert.equal(state.sent.length, 1);
  }
});

Deno.test("a held record whose write fails is logged and turns health not ok; the sender still gets 200", async () => {
  const { state, handler } = blockedWorld(marked(), () => Promise.reject(new Error("ENOSPC")));
  const health = async () =>
    (await handler(new Request("http://localhost/api/health"), PEER)).json();
  assert.equal((await health()).ok, true);
  const response = await handler(post({ message: "x" }, {}, SPAMMER.ip), PEER);
  assert.equal(response.status, 200);
  assert.deepEqual(state.sent, []);
  assert.ok(state.logs.some((fields) => fields.event === "backup_write_failed"));
  assert.equal((await health()).ok, false);
});
