import assert from "node:assert/strict";
import { checkOrigin, corsHeaders, preflightResponse } from "../../lib/http/cors.ts";

const ALLOWED = ["https://site.example"];

Deno.test("checkOrigin checks nothing while ALLOWED_ORIGINS is unset, or without an Origin", () => {
  assert.deepEqual(checkOrigin("https://evil.example", []), { kind: "unchecked" });
  assert.deepEqual(checkOrigin(null, ALLOWED), { kind: "unchecked" });
  assert.deepEqual(corsHeaders({ kind: "unchecked" }, []), {});
});

Deno.test("checkOrigin allows listed origins exactly and refuses every other, null included", () => {
  assert.deepEqual(checkOrigin("https://site.example", ALLOWED), {
    kind: "allowed",
    origin: "https://site.example",
  });
  for (
    const origin of [
      "null",
      "http://site.example",
      "https://site.example.evil.com",
      "https://site.example:443",
      "https://site.example/",
      "https://SITE.example",
      "",
    ]
  ) {
    assert.equal(checkOrigin(origin, ALLOWED).kind, "refused", origin);
  }
});

Deno.test("corsHeaders name the allowed origin, expose Retry-After, never allow credentials", () => {
  const headers = corsHeaders({ kind: "allowed", origin: "https://site.example" }, ALLOWED);
  assert.deepEqual(headers, {
    "access-control-allow-origin": "https://site.example",
    "access-control-expose-headers": "Retry-After",
    vary: "Origin",
  });
  assert.deepEqual(corsHeaders({ kind: "unchecked" }, ALLOWED), { vary: "Origin" });
});

function preflight(origin?: string): Request {
  return new Request("http://localhost/api/contact", {
    method: "OPTIONS",
    headers: {
      ...(origin === undefined ? {} : { origin }),
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type",
    },
  });
}

Deno.test("preflight OPTIONS answers an allowed origin with POST, Content-Type and @formspree/core's headers only", () => {
  const response = preflightResponse(preflight("https://site.example"), ALLOWED);
  assert.equal(response.status, 204);
  assert.equal(response.headers.get("access-control-allow-origin"), "https://site.example");
  assert.equal(response.headers.get("access-control-allow-methods"), "POST");
  assert.equal(
    response.headers.get("access-control-allow-headers"),
    "Content-Type, Formspree-Client, Formspree-Session-Data",
  );
  assert.equal(response.headers.get("access-control-allow-credentials"), null);
  assert.equal(response.headers.get("vary"), "Origin");
});

Deno.test("preflight OPTIONS refuses an unlisted origin with 403 and no CORS headers", async () => {
  const response = preflightResponse(preflight("https://evil.example"), ALLOWED);
  assert.equal(response.status, 403);
  assert.equal(response.headers.get("access-control-allow-origin"), null);
  assert.equal((await response.json()).error, "origin_not_allowed");
  const plain = preflightResponse(preflight(), ALLOWED);
  assert.equal(plain.status, 204);
  assert.equal(plain.headers.get("access-control-allow-origin"), null);
  assert.equal(plain.headers.get("allow"), "POST, OPTIONS");
});
