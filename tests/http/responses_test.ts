import assert from "node:assert/strict";
import { ERRORS } from "../../lib/http/errors.ts";
import {
  cachedAnswerCount,
  errorResponse,
  jsonResponse,
  NO_STORE,
} from "../../lib/http/responses.ts";

Deno.test("jsonResponse answers repeat whole: each copy has its own body and headers", async () => {
  const first = jsonResponse(200, { ok: true });
  first.headers.set("access-control-allow-origin", "https://example.org");
  const second = jsonResponse(200, { ok: true });
  assert.equal(second.headers.get("access-control-allow-origin"), null);
  assert.equal(await first.text(), '{"ok":true}');
  assert.equal(await second.text(), '{"ok":true}');
});

Deno.test("JSON answers carry Content-Type and their own headers only (the proxy adds the rest)", () => {
  const success = jsonResponse(200, { ok: true });
  assert.deepEqual([...success.headers], [["content-type", "application/json"]]);
  const limited = errorResponse("rate_limited", { headers: { "retry-after": "7" } });
  assert.deepEqual([...limited.headers], [
    ["content-type", "application/json"],
    ["retry-after", "7"],
  ]);
  const health = jsonResponse(200, { ok: true, configured: true }, NO_STORE);
  assert.equal(health.headers.get("cache-control"), "no-store");
});

Deno.test("errorResponse keeps answers apart by field, sentence and the field's presence", async () => {
  const bodies = await Promise.all([
    errorResponse("field_required", { field: "message", message: "a" }),
    errorResponse("field_required", { field: "name", message: "a" }),
    errorResponse("field_required", { message: "a" }),
    errorResponse("field_required", { field: "message", message: "b" }),
    errorResponse("field_required"),
  ].map((response) => response.json()));
  assert.deepEqual(bodies, [
    { ok: false, error: "field_required", field: "message", message: "a" },
    { ok: false, error: "field_required", field: "name", message: "a" },
    { ok: false, error: "field_required", message: "a" },
    { ok: false, error: "field_required", field: "message", message: "b" },
    { ok: false, error: "field_required", message: ERRORS.field_required.message },
  ]);
});

Deno.test("errorResponse keeps answers with different headers or bodies apart", async () => {
  const a = errorResponse("rate_limited", { headers: { "retry-after": "5" } });
  const b = errorResponse("rate_limited", { headers: { "retry-after": "6" } });
  const c = errorResponse("field_required", { field: "message", message: "message is required." });
  assert.equal(a.headers.get("retry-after"), "5");
  assert.equal(b.headers.get("retry-after"), "6");
  assert.equal(a.status, 429);
  assert.deepEqual(await c.json(), {
    ok: false,
    error: "field_required",
    field: "message",
    message: "message is required.",
  });
});

Deno.test("error answers naming a field the sender chose are not kept: they cannot fill the answer cache", async () => {
  errorResponse("field_too_long", {
    field: "message",
    message: "message must be at most 4000 characters.",
  });
  const before = cachedAnswerCount();
  for (let i = 0; i < 50; i++) {
    const response = errorResponse("field_name", {
      field: `f${i}`,
      message: "A field name must be…",
    });
    assert.equal(response.status, 400);
    assert.equal((await response.json()).field, `f${i}`);
  }
  assert.equal(cachedAnswerCount(), before);
  // The spec's own fields' answers are still kept.
  errorResponse("field_too_long", {
    field: "name",
    message: "name must be at most 200 characters (kept).",
  });
  assert.equal(cachedAnswerCount(), before + 1);
});
