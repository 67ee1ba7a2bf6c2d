import assert from "node:assert/strict";
import { isTurnstileTestSecret, Turnstile } from "../../lib/challenge/turnstile.ts";

const SECRET = "0x4AAAAAAATestSecretKeyValue";
const URL_ = "http://127.0.0.1:9/siteverify";

interface Call {
  url: string;
  form: URLSearchParams;
}

/** A Turnstile gate whose fetch answers with `answer` and records each call. */
function gate(
  answer: (call: Call, signal: AbortSignal) => Promise<Response> | Response,
  timeoutMs = 5_000,
) {
  const calls: Call[] = [];
  const outages: string[] = [];
  const turnstile = new Turnstile({
    secret: SECRET,
    verifyUrl: URL_,
    timeoutMs,
    onOutage: (reason) => outages.push(reason),
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      const call = { url: String(input), form: new URLSearchParams(String(init?.body)) };
      calls.push(call);
      return await answer(call, init!.signal!);
    }) as typeof fetch,
  });
  return { turnstile, calls, outages };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

Deno.test("Turnstile: success:true passes; the secret, the token and the computed client address are posted", async () => {
  const { turnstile, calls, outages } = gate(() => json({ success: true, "error-codes": [] }));
  assert.equal(await turnstile.check("token-1", "203.0.113.7", 0), "passed");
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.url, URL_);
  assert.equal(calls[0]!.form.get("secret"), SECRET);
  assert.equal(calls[0]!.form.get("response"), "token-1");
  assert.equal(calls[0]!.form.get("remoteip"), "203.0.113.7");
  assert.deepEqual(outages, []);
});

Deno.test("Turnstile: success:false with the visitor's error codes is challenge_failed", async () => {
  for (const codes of [["invalid-input-response"], ["timeout-or-duplicate"], []]) {
    const { turnstile, outages } = gate(() => json({ success: false, "error-codes": codes }));
    assert.equal(await turnstile.check("token", "203.0.113.7", 0), "challenge_failed");
    assert.deepEqual(outages, []);
  }
});

Deno.test("Turnstile: success:false blaming the service (wrong secret, internal error) is challenge_unavailable", async () => {
  for (const code of ["invalid-input-secret", "missing-input-secret", "internal-error"]) {
    const { turnstile, outages } = gate(() => json({ success: false, "error-codes": [code] }));
    assert.equal(await turnstile.check("token", "203.0.113.7", 0), "challenge_unavailable");
    assert.deepEqual(outages, [code]);
  }
});

Deno.test("Turnstile: a missing token is challenge_required and nothing is asked", async () => {
  const { turnstile, calls } = gate(() => json({ success: true }));
  for (const value of [undefined, null, ""]) {
    assert.equal(await turnstile.check(value, "203.0.113.7", 0), "challenge_required");
  }
  for (const value of [42, {}, "x".repeat(2049)]) {
    assert.equal(await turnstile.check(value, "203.0.113.7", 0), "challenge_failed");
  }
  assert.equal(calls.length, 0);
});

Deno.test("Turnstile: a timeout is challenge_unavailable, never a pass", async () => {
  const { turnstile, outages } = gate(
    (_call, signal) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener("abort", () => reject(signal.reason));
      }),
    50,
  );
  assert.equal(await turnstile.check("token", "203.0.113.7", 0), "challenge_unavailable");
  assert.deepEqual(outages, ["timeout"]);
});

Deno.test("Turnstile: non-JSON, a 5xx, an answer without success, a huge answer or a network error is challenge_unavailable", async () => {
  const cases: Array<[() => Response | Promise<Response>, string]> = [
    [() => new Response("<html>oops</html>"), "answer not JSON"],
    [() => json({ success: true }, 502), "status 502"],
    [() => json({ success: "yes" }), "answer without success"],
    [() => json(["success"]), "answer without success"],
    [() => new Response("null"), "answer not an object"],
    [() => new Response(" ".repeat(20_000) + '{"success":true}'), "answer too large"],
    [() => Promise.reject(new TypeError("connection refused")), "TypeError"],
  ];
  for (const [answer, reason] of cases) {
    const { turnstile, outages } = gate(answer);
    assert.equal(await turnstile.check("token", "203.0.113.7", 0), "challenge_unavailable", reason);
    assert.deepEqual(outages, [reason]);
    assert.ok(!outages.join().includes(SECRET));
  }
});

Deno.test("Turnstile: beyond 32 verifications in flight a token is challenge_unavailable at once, nothing asked", async () => {
  const waiting: Array<() => void> = [];
  let held = true;
  const { turnstile, calls, outages } = gate(() =>
    held
      ? new Promise<Response>((resolve) => waiting.push(() => resolve(json({ success: true }))))
      : json({ success: true })
  );
  const pending = Array.from({ length: 32 }, () => turnstile.check("token", "203.0.113.7", 0));
  assert.equal(await turnstile.check("token", "203.0.113.8", 0), "challenge_unavailable");
  assert.equal(calls.length, 32);
  assert.deepEqual(outages, []);
  held = false;
  for (const release of waiting) release();
  assert.deepEqual(new Set(await Promise.all(pending)), new Set(["passed"]));
  // Finished verifications free their places, failed ones too.
  const after = gate(() => Promise.reject(new TypeError("connection refused")));
  for (let i = 0; i < 40; i++) {
    assert.equal(await after.turnstile.check("t", "203.0.113.9", 0), "challenge_unavailable");
  }
  assert.equal(after.calls.length, 40);
  assert.equal(await turnstile.check("token", "203.0.113.8", 0), "passed");
});

Deno.test("Turnstile: Cloudflare's three test secret keys are recognised, real-looking keys are not", () => {
  for (const key of ["1x", "2x", "3x"]) {
    assert.ok(isTurnstileTestSecret(`${key}0000000000000000000000000000000AA`), key);
  }
  for (
    const key of [
      SECRET,
      "4x0000000000000000000000000000000AA",
      "1x0000000000000000000000000000000AB",
    ]
  ) {
    assert.equal(isTurnstileTestSecret(key), false, key);
  }
});
