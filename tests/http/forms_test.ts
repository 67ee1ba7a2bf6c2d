import assert from "node:assert/strict";
import { PEER, setup } from "../support/handler_setup.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";

const FORMS = [
  { id: "support", allowedOrigins: [] },
  { id: "sales", allowedOrigins: ["https://shop.example"] },
];

function postTo(path: string, body: unknown, headers: Record<string, string> = {}) {
  return new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.1", ...headers },
    body: JSON.stringify(body),
  });
}

Deno.test("POST /api/contact/<id> serves each form of FORMS and records its id; the default form has none", async () => {
  const { state, handler } = setup({ forms: FORMS });
  for (const path of ["/api/contact/support", "/api/contact", "/api/contact/sales"]) {
    assert.equal((await handler(postTo(path, { message: "m" }), PEER)).status, 200, path);
  }
  assert.deepEqual(state.outbox.map((s) => s.form), ["support", undefined, "sales"]);
  assert.deepEqual(state.lines.map((line) => JSON.parse(line).form), [
    "support",
    undefined,
    "sales",
  ]);
});

Deno.test("POST to an unknown form id answers 404 with a JSON error, storing nothing", async () => {
  const { state, handler } = setup({ forms: FORMS });
  for (
    const path of [
      "/api/contact/nope",
      "/api/contact/",
      "/api/contact/support/x",
      "/api/contact/SUPPORT",
    ]
  ) {
    const response = await handler(postTo(path, { message: "m" }), PEER);
    assert.equal(response.status, 404, path);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal((await response.json()).error, "not_found");
  }
  assert.deepEqual([state.lines.length, state.outbox.length], [0, 0]);
});

Deno.test("each form has its own ALLOWED_ORIGINS: its preflight, its Origin check", async () => {
  const { handler } = setup({ forms: FORMS });
  const origin = { origin: "https://shop.example" };
  assert.equal(
    (await handler(postTo("/api/contact/sales", { message: "m" }, origin), PEER)).status,
    200,
  );
  const other = await handler(
    postTo("/api/contact/sales", { message: "m" }, { origin: "https://evil.example" }),
    PEER,
  );
  assert.equal(other.status, 403);
  const preflight = new Request("http://localhost/api/contact/sales", {
    method: "OPTIONS",
    headers: { ...origin, "access-control-request-method": "POST" },
  });
  const answer = await handler(preflight, PEER);
  assert.equal(answer.headers.get("access-control-allow-origin"), "https://shop.example");
  // The support form takes the service's (none): no preflight there.
  const none = new Request("http://localhost/api/contact/support", { method: "OPTIONS" });
  assert.equal((await handler(none, PEER)).status, 405);
});

Deno.test("the rate limit is one budget per address across all forms", async () => {
  const { handler } = setup({ forms: FORMS });
  const paths = ["/api/contact", "/api/contact/support", "/api/contact/sales"];
  const statuses = [];
  for (let i = 0; i < 6; i++) {
    statuses.push((await handler(postTo(paths[i % 3]!, { message: `m${i}` }), PEER)).status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
});

Deno.test("GET /api/challenge accepts the origins of every form, with CORS for the matching one", async () => {
  const { handler } = setup({
    forms: FORMS,
    allowedOrigins: ["https://site.example"],
    challenge: {
      field: "altcha",
      check: () => Promise.resolve("passed" as const),
      issue: () => Promise.resolve({ algorithm: "SHA-256" }),
    },
    challengeLimiter: new RateLimiter({ limit: 30, windowMs: 60_000 }),
  });
  const fetchFrom = (origin: string) =>
    handler(
      new Request("http://localhost/api/challenge", {
        headers: { origin, "x-forwarded-for": "198.51.100.1" },
      }),
      PEER,
    );
  for (const origin of ["https://site.example", "https://shop.example"]) {
    const response = await fetchFrom(origin);
    assert.equal(response.status, 200, origin);
    assert.equal(response.headers.get("access-control-allow-origin"), origin);
    assert.equal((await response.json()).algorithm, "SHA-256");
  }
  const refused = await fetchFrom("https://evil.example");
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get("access-control-allow-origin"), null);
  assert.equal((await refused.json()).error, "origin_not_allowed");
});
