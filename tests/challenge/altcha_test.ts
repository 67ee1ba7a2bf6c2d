import assert from "node:assert/strict";
import { createChallenge, solveChallenge } from "altcha-lib/v1";
import { Altcha, ALTCHA_MAX_NUMBER, decodePayload, ReplaySet } from "../../lib/challenge/altcha.ts";
import { ConfigError, parseConfig } from "../../lib/config/config.ts";
import { isRefusal } from "../../lib/log/tally.ts";
import { permissionGaps, serviceFlags } from "../../lib/config/permissions.ts";
import { compileArgs } from "../../tasks/compile.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { PEER, post, postForm, setup } from "../support/handler_setup.ts";

const SECRET = "k".repeat(20) + "Q2hhbGxlbmdlU2VjcmV0Rm9yVGVzdHM";
const OTHER_SECRET = "z".repeat(44);
// Small numbers keep the tests' solving short; the rules do not depend on the size.
const MAX = 500;

interface IssuedChallenge {
  algorithm: string;
  challenge: string;
  salt: string;
  signature: string;
}

/** Solves `challenge` with altcha-lib's own solver and encodes the payload as the widget does. */
async function solve(challenge: IssuedChallenge, change: Record<string, unknown> = {}) {
  const solution = await solveChallenge(challenge.challenge, challenge.salt, "SHA-256", MAX)
    .promise;
  assert.ok(solution !== null);
  return btoa(JSON.stringify({
    algorithm: challenge.algorithm,
    challenge: challenge.challenge,
    number: solution.number,
    salt: challenge.salt,
    signature: challenge.signature,
    took: solution.took,
    ...change,
  }));
}

const gate = () => new Altcha({ secret: SECRET, maxNumber: MAX });

Deno.test("ALTCHA: a solved challenge passes once; the same solution again fails as replayed", async () => {
  const altcha = gate();
  const payload = await solve((await altcha.issue(Date.now())) as IssuedChallenge);
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "passed");
  assert.equal(altcha.consume(payload, Date.now()), "passed");
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "challenge_failed");
  assert.equal(altcha.consume(payload, Date.now()), "challenge_failed");
  // Nor with the number written differently (the challenge is what is used up).
  const json = JSON.parse(atob(payload));
  const padded = btoa(JSON.stringify({ ...json, number: json.number + 0.0, took: 1 }));
  assert.equal(await altcha.check(padded, "198.51.100.2", Date.now()), "challenge_failed");
});

Deno.test("ALTCHA: a solution checked but not consumed is not used up; consume is once only", async () => {
  const altcha = gate();
  const payload = await solve((await altcha.issue(Date.now())) as IssuedChallenge);
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "passed");
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "passed");
  // Two checks passed at once (two posts of one solution): only the first consume wins.
  assert.deepEqual([altcha.consume(payload, Date.now()), altcha.consume(payload, Date.now())], [
    "passed",
    "challenge_failed",
  ]);
  assert.equal(altcha.consume("garbage", Date.now()), "challenge_failed");
});

Deno.test("ALTCHA: at its expiry millisecond a used solution is refused, not forgotten and passed again", async () => {
  const altcha = gate();
  const payload = await solve((await altcha.issue(Date.now())) as IssuedChallenge);
  const expires = Number(/expires=(\d+)/.exec(JSON.parse(atob(payload)).salt)?.[1]) * 1000;
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "passed");
  assert.equal(altcha.consume(payload, Date.now()), "passed");
  // The replay set forgets it at `expires`; altcha-lib (system clock) still accepts it then.
  assert.equal(await altcha.check(payload, "198.51.100.1", expires), "challenge_failed");
  assert.equal(altcha.consume(payload, expires), "challenge_failed");
  // Unused, it is refused at that millisecond too, and passes one before it.
  const fresh = await solve((await altcha.issue(Date.now())) as IssuedChallenge);
  const freshExpires = Number(/expires=(\d+)/.exec(JSON.parse(atob(fresh)).salt)?.[1]) * 1000;
  assert.equal(await altcha.check(fresh, "198.51.100.1", freshExpires), "challenge_failed");
  assert.equal(await altcha.check(fresh, "198.51.100.1", freshExpires - 1), "passed");
});

Deno.test("ALTCHA: a missing or blank solution is challenge_required, garbage is challenge_failed", async () => {
  const altcha = gate();
  for (const value of [undefined, null, ""]) {
    assert.equal(await altcha.check(value, "198.51.100.1", Date.now()), "challenge_required");
  }
  for (const value of ["x", "%%%", btoa("[]"), btoa("{}"), 42, {}, ["a"], "A".repeat(5000)]) {
    assert.equal(await altcha.check(value, "198.51.100.1", Date.now()), "challenge_failed");
  }
});

Deno.test("ALTCHA: an expired challenge fails even when solved", async () => {
  const altcha = gate();
  // Issued 11 minutes ago: it expired a minute ago (altcha-lib reads the system clock).
  const issued = await altcha.issue(Date.now() - 11 * 60_000);
  const payload = await solve(issued as IssuedChallenge);
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "challenge_failed");
  // The same kind of challenge issued now passes: only the expiry differs.
  const fresh = await solve((await altcha.issue(Date.now())) as IssuedChallenge);
  assert.equal(await altcha.check(fresh, "198.51.100.1", Date.now()), "passed");
  assert.equal(altcha.consume(payload, Date.now()), "challenge_failed");
});

Deno.test("ALTCHA: a challenge signed with another secret fails", async () => {
  const altcha = gate();
  const foreign = await new Altcha({ secret: OTHER_SECRET, maxNumber: MAX }).issue(Date.now());
  assert.equal(
    await altcha.check(await solve(foreign as IssuedChallenge), "198.51.100.1", Date.now()),
    "challenge_failed",
  );
});

Deno.test("ALTCHA: a tampered number, signature or salt fails", async () => {
  const altcha = gate();
  const issued = (await altcha.issue(Date.now())) as IssuedChallenge;
  const payload = await solve(issued);
  const json = JSON.parse(atob(payload));
  const flip = (hex: string) => (hex[0] === "0" ? "1" : "0") + hex.slice(1);
  for (
    const change of [
      { number: json.number + 1 },
      { number: -1 },
      { number: "1" },
      { signature: flip(json.signature) },
      { salt: json.salt.replace(/expires=\d+/, "expires=9999999999") },
    ]
  ) {
    const tampered = btoa(JSON.stringify({ ...json, ...change }));
    assert.equal(await altcha.check(tampered, "198.51.100.1", Date.now()), "challenge_failed");
  }
  // Untampered, the same payload still passes: the refusals above used nothing up.
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "passed");
  assert.equal(altcha.consume(payload, Date.now()), "passed");
});

Deno.test("ALTCHA: a challenge of another algorithm (SHA-1, cheaper to solve) fails", async () => {
  const altcha = gate();
  const sha1 = await createChallenge({
    hmacKey: SECRET,
    algorithm: "SHA-1",
    maxNumber: MAX,
    expires: new Date(Date.now() + 60_000),
  });
  const solution = await solveChallenge(sha1.challenge, sha1.salt, "SHA-1", MAX).promise;
  const payload = btoa(JSON.stringify({ ...sha1, number: solution!.number }));
  assert.equal(decodePayload(payload), undefined);
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "challenge_failed");
});

Deno.test("ALTCHA: a challenge without an expiry (not issued here) fails", async () => {
  const altcha = gate();
  const forever = await createChallenge({ hmacKey: SECRET, maxNumber: MAX });
  const payload = await solve(forever);
  assert.equal(await altcha.check(payload, "198.51.100.1", Date.now()), "challenge_failed");
});

Deno.test("ALTCHA: issued challenges are SHA-256, signed, expire in 10 minutes, within maxNumber", async () => {
  const now = Date.now();
  const issued = await new Altcha({ secret: SECRET }).issue(now) as Record<string, unknown>;
  assert.equal(issued.algorithm, "SHA-256");
  assert.equal(issued.maxnumber, ALTCHA_MAX_NUMBER);
  assert.ok(ALTCHA_MAX_NUMBER >= 10_000 && ALTCHA_MAX_NUMBER <= 100_000);
  assert.match(String(issued.signature), /^[0-9a-f]{64}$/);
  const expires = Number(/expires=(\d+)/.exec(String(issued.salt))?.[1]);
  assert.equal(expires, Math.floor((now + 600_000) / 1000));
  assert.ok(!JSON.stringify(issued).includes(SECRET));
});

Deno.test("ALTCHA: when the set of used solutions is full of unexpired ones, a new solution is 503, not forgotten", async () => {
  let warnings = 0;
  const altcha = new Altcha({
    secret: SECRET,
    maxNumber: MAX,
    replayCapacity: 2,
    onFull: () => warnings++,
  });
  const now = Date.now();
  const payloads = [];
  for (let i = 0; i < 4; i++) {
    payloads.push(await solve(await altcha.issue(now) as IssuedChallenge));
  }
  for (const payload of payloads) {
    assert.equal(await altcha.check(payload, "198.51.100.1", now), "passed");
  }
  assert.equal(altcha.consume(payloads[0], now), "passed");
  assert.equal(altcha.consume(payloads[1], now), "passed");
  assert.equal(altcha.consume(payloads[2], now), "challenge_unavailable");
  // The first two are still refused as used.
  assert.equal(await altcha.check(payloads[0], "198.51.100.1", now), "challenge_failed");
  assert.equal(altcha.consume(payloads[1], now), "challenge_failed");
  // Told once, not per refusal: again only a minute later.
  assert.equal(altcha.consume(payloads[3], now + 1_000), "challenge_unavailable");
  assert.equal(altcha.consume(payloads[2], now + 59_999), "challenge_unavailable");
  assert.equal(warnings, 1);
  assert.equal(altcha.consume(payloads[3], now + 60_000), "challenge_unavailable");
  assert.equal(warnings, 2);
});

/** The same moment by both clocks (the tests of the bound need no clock steps). */
const at = (ms: number) => ({ wall: ms, monotonic: ms });

Deno.test("replay set: never holds more than its capacity; expired keys make room", () => {
  const set = new ReplaySet(3);
  assert.ok(set.add("a", at(1_000), at(0)));
  assert.ok(set.add("b", at(5_000), at(0)));
  assert.ok(set.add("c", at(2_000), at(0)));
  assert.equal(set.add("d", at(9_000), at(500)), false);
  assert.equal(set.size, 3);
  assert.ok(set.has("a", at(500)));
  // At 1000 "a" expired (the oldest end); at 2000 "c" expired behind an unexpired "b".
  assert.ok(set.add("d", at(9_000), at(1_000)));
  assert.equal(set.has("a", at(1_000)), false);
  assert.ok(set.add("e", at(9_000), at(2_000)));
  assert.equal(set.size, 3);
  assert.deepEqual(["b", "c", "d", "e"].filter((key) => set.has(key, at(2_000))), [
    "b",
    "d",
    "e",
  ]);
});

Deno.test("replay set: a key is held until it has expired by both clocks", () => {
  const set = new ReplaySet(10);
  assert.ok(set.add("k", { wall: 10_000, monotonic: 600 }, { wall: 9_500, monotonic: 100 }));
  // Expired by the wall clock only (stepped forward), or by the monotonic clock only: held.
  assert.ok(set.has("k", { wall: 99_000, monotonic: 200 }));
  assert.ok(set.has("k", { wall: 9_600, monotonic: 5_000 }));
  assert.ok(set.add("other", at(1e9), { wall: 99_000, monotonic: 200 }));
  assert.ok(set.has("k", { wall: 9_600, monotonic: 300 }));
  assert.equal(set.has("k", { wall: 10_000, monotonic: 600 }), false);
});

Deno.test("replay set: a flood of distinct keys stays at the bound", () => {
  const set = new ReplaySet(1000);
  let accepted = 0;
  for (let i = 0; i < 50_000; i++) if (set.add(`k${i}`, at(600_000), at(i))) accepted++;
  assert.equal(set.size, 1000);
  assert.equal(accepted, 1000);
  assert.throws(() => new ReplaySet(0), RangeError);
});

Deno.test("ALTCHA: a used solution stays used after the wall clock steps forward past its expiry and back", async () => {
  const realNow = Date.now();
  const clock = { now: () => 1_000, wallNow: () => realNow };
  const altcha = new Altcha({ secret: SECRET, maxNumber: MAX, clock });
  const payload = await solve((await altcha.issue(realNow)) as IssuedChallenge);
  assert.equal(await altcha.check(payload, "198.51.100.1", realNow), "passed");
  assert.equal(altcha.consume(payload, realNow), "passed");
  // The system clock jumps an hour ahead: another solution is used up, which sweeps the set.
  const ahead = realNow + 3_600_000;
  clock.wallNow = () => ahead;
  const other = await solve((await altcha.issue(ahead)) as IssuedChallenge);
  assert.equal(altcha.consume(other, ahead), "passed");
  // The clock is set right again two seconds later (monotonic): the first solution is still
  // within its 10 minutes by both clocks, and altcha-lib would accept it; it stays used.
  clock.wallNow = () => realNow + 2_000;
  clock.now = () => 3_000;
  assert.equal(await altcha.check(payload, "198.51.100.1", realNow + 2_000), "challenge_failed");
  assert.equal(altcha.consume(payload, realNow + 2_000), "challenge_failed");
});

// The POST's rules with a challenge on.

function altchaSetup() {
  const altcha = gate();
  const { state, handler } = setup({
    challenge: altcha,
    challengeLimiter: new RateLimiter({ limit: 3, windowMs: 60_000 }),
  });
  state.now = new Date(); // altcha-lib checks expiry against the system clock
  return { altcha, state, handler };
}

async function fetchChallenge(
  handler: ReturnType<typeof setup>["handler"],
  ip = "198.51.100.1",
  headers: Record<string, string> = {},
) {
  return await handler(
    new Request("http://localhost/api/challenge", {
      headers: { "x-forwarded-for": ip, ...headers },
    }),
    PEER,
  );
}

Deno.test("POST /api/contact with CHALLENGE=altcha: a solved challenge is accepted once, then 403 challenge_failed", async () => {
  const { state, handler } = altchaSetup();
  const challenge = await (await fetchChallenge(handler)).json();
  const altcha = await solve(challenge);
  const first = await handler(post({ message: "hello", altcha }), PEER);
  assert.equal(first.status, 200);
  const again = await handler(post({ message: "hello", altcha }), PEER);
  assert.equal(again.status, 403);
  assert.equal((await again.json()).error, "challenge_failed");
  assert.equal(state.lines.length, 1);
  assert.equal(state.texts.length, 1);
  assert.ok(!state.lines[0]!.includes("altcha") && !state.lines[0]!.includes(altcha.slice(0, 20)));
});

Deno.test("POST /api/contact with CHALLENGE=altcha: a post refused by validation does not use up its solution", async () => {
  const { state, handler } = altchaSetup();
  const altcha = await solve(await (await fetchChallenge(handler)).json());
  const empty = await handler(post({ message: "", altcha }), PEER);
  assert.equal(empty.status, 400);
  assert.equal((await empty.json()).error, "field_required");
  const tooLong = await handler(postForm({ message: "x".repeat(5000), altcha }), PEER);
  assert.equal(tooLong.status, 400);
  await tooLong.body?.cancel();
  assert.equal(state.lines.length, 0);
  const valid = await handler(post({ message: "hello", altcha }), PEER);
  assert.equal(valid.status, 200);
  const again = await handler(post({ message: "hello", altcha }), PEER);
  assert.equal((await again.json()).error, "challenge_failed");
  assert.equal(state.lines.length, 1);
});

Deno.test("POST /api/contact with CHALLENGE=altcha: two concurrent posts of one solution: one 200, one 403", async () => {
  const { state, handler } = altchaSetup();
  const altcha = await solve(await (await fetchChallenge(handler)).json());
  const answers = await Promise.all([
    handler(post({ message: "first", altcha }, {}, "198.51.100.31"), PEER),
    handler(post({ message: "second", altcha }, {}, "198.51.100.32"), PEER),
  ]);
  assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 403]);
  await Promise.all(answers.map((answer) => answer.body?.cancel()));
  assert.equal(state.lines.length, 1);
});

Deno.test("POST /api/contact with CHALLENGE=altcha: missing is 403 challenge_required, nothing stored, sent or logged one line each", async () => {
  const { state, handler } = altchaSetup();
  const response = await handler(post({ message: "hello" }), PEER);
  assert.equal(response.status, 403);
  assert.equal((await response.json()).error, "challenge_required");
  const bad = await handler(post({ message: "hello", altcha: "bm9wZQ==" }), PEER);
  assert.equal((await bad.json()).error, "challenge_failed");
  assert.equal(state.lines.length + state.texts.length + state.outbox.length, 0);
  const lines = state.logs.filter((line) => line.event === "contact");
  assert.deepEqual(lines.map((line) => [line.status, line.result]), [
    [403, "challenge_required"],
    [403, "challenge_failed"],
  ]);
  assert.ok(lines.every((line) => isRefusal(line)));
});

Deno.test("POST /api/contact with CHALLENGE=altcha: the honeypot is still a silent 200 before the challenge", async () => {
  const { state, handler } = altchaSetup();
  const response = await handler(post({ message: "buy", website: "http://spam" }), PEER);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { ok: true });
  assert.equal(state.lines.length + state.texts.length, 0);
});

Deno.test("POST /api/contact with CHALLENGE=altcha: the challenge comes before field validation, JSON errors before the challenge", async () => {
  const { handler } = altchaSetup();
  const tooLong = await handler(post({ message: "x".repeat(5000) }), PEER);
  assert.equal((await tooLong.json()).error, "challenge_required");
  const broken = await handler(post("{nope"), PEER);
  assert.equal((await broken.json()).error, "invalid_json");
  const notObject = await handler(post("[1]"), PEER);
  assert.equal((await notObject.json()).error, "invalid_body");
});

Deno.test("POST /api/contact with CHALLENGE=altcha: a urlencoded post is checked too; without a solution it gets the JavaScript sentence", async () => {
  const { state, handler } = altchaSetup();
  const refused = await handler(postForm({ message: "hello" }), PEER);
  assert.equal(refused.status, 403);
  assert.match(refused.headers.get("content-type")!, /^text\/plain/);
  assert.match(await refused.text(), /needs JavaScript/);
  const challenge = await (await fetchChallenge(handler)).json();
  const accepted = await handler(
    postForm({ message: "hello", altcha: await solve(challenge) }),
    PEER,
  );
  assert.equal(accepted.status, 200);
  assert.equal(state.lines.length, 1);
  assert.equal(JSON.parse(state.lines[0]!).altcha, undefined);
});

Deno.test("GET /api/challenge: JSON, no-store, its own budget: 429 after 3 here, POSTs unaffected", async () => {
  const { handler } = altchaSetup();
  for (let i = 0; i < 3; i++) {
    const response = await fetchChallenge(handler, "203.0.113.9");
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("cache-control"), "no-store");
    assert.equal((await response.json()).algorithm, "SHA-256");
  }
  const limited = await fetchChallenge(handler, "203.0.113.9");
  assert.equal(limited.status, 429);
  assert.ok(Number(limited.headers.get("retry-after")) > 0);
  // Another client still gets one, and this client may still post (to be refused for the
  // missing challenge, not for the rate).
  assert.equal((await fetchChallenge(handler, "203.0.113.10")).status, 200);
  const posted = await handler(post({ message: "hi" }, {}, "203.0.113.9"), PEER);
  assert.equal((await posted.json()).error, "challenge_required");
});

Deno.test("GET /api/challenge: 404 without CHALLENGE=altcha; 405 for POST; CORS like the POST", async () => {
  const plain = setup();
  assert.equal((await fetchChallenge(plain.handler)).status, 404);
  const { altcha } = altchaSetup();
  const { handler, state } = setup({
    challenge: altcha,
    challengeLimiter: new RateLimiter({ limit: 3, windowMs: 60_000 }),
    allowedOrigins: ["https://site.example"],
  });
  state.now = new Date();
  const posted = await handler(
    new Request("http://localhost/api/challenge", { method: "POST", body: "" }),
    PEER,
  );
  assert.equal(posted.status, 405);
  const allowed = await fetchChallenge(handler, "198.51.100.1", { origin: "https://site.example" });
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers.get("access-control-allow-origin"), "https://site.example");
  const refused = await fetchChallenge(handler, "198.51.100.1", { origin: "https://evil.example" });
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).error, "origin_not_allowed");
});

// Settings and permissions.

Deno.test("CHALLENGE: none by default; altcha needs 32 random bytes (43 base64 or 64 hex characters); turnstile a secret key", () => {
  assert.deepEqual(parseConfig({}).challenge, { kind: "none" });
  assert.deepEqual(parseConfig({ CHALLENGE: "altcha", CHALLENGE_SECRET: SECRET }).challenge, {
    kind: "altcha",
    secret: SECRET,
  });
  assert.deepEqual(
    parseConfig({ CHALLENGE: "turnstile", CHALLENGE_SECRET: "0x4AAAAAAAtestsecret" }).challenge,
    {
      kind: "turnstile",
      secret: "0x4AAAAAAAtestsecret",
      verifyUrl: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
    },
  );
  const refused = (env: Record<string, string>, setting: string) => {
    assert.throws(() => parseConfig(env), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.setting, setting);
      // The secret is never echoed.
      if (env.CHALLENGE_SECRET) assert.ok(!error.message.includes(env.CHALLENGE_SECRET));
      return true;
    });
  };
  refused({ CHALLENGE: "captcha" }, "CHALLENGE");
  refused({ CHALLENGE: "altcha" }, "CHALLENGE_SECRET");
  refused({ CHALLENGE: "altcha", CHALLENGE_SECRET: "a".repeat(42) }, "CHALLENGE_SECRET");
  refused({ CHALLENGE: "altcha", CHALLENGE_SECRET: "a b".repeat(20) }, "CHALLENGE_SECRET");
  // Hex carries 4 bits a character: 43 of them are about 21 bytes, so hex needs 64.
  const hex32 = "0123456789abcdef".repeat(4);
  for (const short of [hex32.slice(0, 43), hex32.slice(0, 63), hex32.slice(0, 63).toUpperCase()]) {
    refused({ CHALLENGE: "altcha", CHALLENGE_SECRET: short }, "CHALLENGE_SECRET");
  }
  for (const enough of [hex32, hex32.toUpperCase(), "Zm9v".repeat(10) + "YmE"]) {
    assert.equal(
      parseConfig({ CHALLENGE: "altcha", CHALLENGE_SECRET: enough }).challenge.kind,
      "altcha",
      enough,
    );
  }
  refused({ CHALLENGE: "turnstile" }, "CHALLENGE_SECRET");
  refused({ CHALLENGE: "turnstile", CHALLENGE_SECRET: "0x4AAA,evil" }, "CHALLENGE_SECRET");
  refused(
    { CHALLENGE: "turnstile", CHALLENGE_SECRET: SECRET, TURNSTILE_VERIFY_URL: "ftp://x" },
    "TURNSTILE_VERIFY_URL",
  );
  refused(
    { CHALLENGE: "turnstile", CHALLENGE_SECRET: SECRET, TURNSTILE_VERIFY_URL: "https://a,b/x" },
    "TURNSTILE_VERIFY_URL",
  );
  // The compile task derives permissions without the secret.
  assert.equal(
    parseConfig({ CHALLENGE: "turnstile" }, { requireSecrets: false }).challenge.kind,
    "turnstile",
  );
});

Deno.test("permissions: the Turnstile verify host is granted only with CHALLENGE=turnstile", () => {
  const net = (env: Record<string, string>) =>
    serviceFlags(parseConfig(env)).find((flag) => flag.startsWith("--allow-net="));
  const base = "--allow-net=127.0.0.1:8787,api.telegram.org:443";
  assert.equal(net({}), base);
  assert.equal(net({ CHALLENGE: "altcha", CHALLENGE_SECRET: SECRET }), base);
  assert.equal(
    net({ CHALLENGE: "turnstile", CHALLENGE_SECRET: SECRET }),
    `${base},challenges.cloudflare.com:443`,
  );
  assert.equal(
    net({
      CHALLENGE: "turnstile",
      CHALLENGE_SECRET: SECRET,
      TURNSTILE_VERIFY_URL: "http://127.0.0.1:9999/siteverify",
    }),
    `${base},127.0.0.1:9999`,
  );
  // A binary built without it names the setting instead of failing later.
  const config = parseConfig({ CHALLENGE: "turnstile", CHALLENGE_SECRET: SECRET });
  const gaps = permissionGaps(
    config,
    (p) => p.name !== "net" || p.host !== "challenges.cloudflare.com:443",
  );
  assert.deepEqual(gaps.map((gap) => gap.setting), ["TURNSTILE_VERIFY_URL"]);
});

Deno.test("compile: CHALLENGE=turnstile at build time bakes the verify host in, without the secret", () => {
  const args = compileArgs({ CHALLENGE: "turnstile" });
  assert.ok(
    args.some((arg) =>
      arg.startsWith("--allow-net=") && arg.endsWith(",challenges.cloudflare.com:443")
    ),
  );
  assert.ok(args.includes("CHALLENGE=turnstile"));
  assert.ok(!compileArgs({}).some((arg) => arg.includes("cloudflare")));
});
