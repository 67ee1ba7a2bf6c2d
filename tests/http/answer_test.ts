import assert from "node:assert/strict";
import { answersOf, answerStyle, wantsJson } from "../../lib/http/answer.ts";
import { ERRORS } from "../../lib/http/errors.ts";

Deno.test("wantsJson: an Accept that lists application/json asks for JSON, unless its weight is 0", () => {
  for (
    const accept of [
      "application/json",
      "Application/JSON",
      "application/json, text/plain, */*",
      "text/html;q=0.9, application/json;q=0.5",
      "application/json; charset=utf-8",
      "application/json;q=0.001",
    ]
  ) assert.equal(wantsJson(accept), true, accept);
  for (
    const accept of [
      null,
      "",
      "*/*",
      // What Chromium sends when it posts a form itself.
      "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
      "application/json;q=0",
      "application/json; q=0.0",
      "application/jsonx",
      "application/*",
    ]
  ) assert.equal(wantsJson(accept), false, String(accept));
});

Deno.test("answerStyle: a form body asking for JSON gets JSON; /api/f/<id> gets Formspree's shape", () => {
  const table: Array<[boolean, string | null, boolean, string]> = [
    [false, null, false, "json"],
    [false, "text/html", false, "json"],
    [true, null, false, "page"],
    [true, "text/html,*/*;q=0.8", false, "page"],
    [true, "application/json", false, "json"],
    [false, null, true, "formspree"],
    [true, "application/json", true, "formspree"],
    // A Formspree form whose action now points at /api/f/<id>, posted by the browser itself.
    [true, "text/html,*/*;q=0.8", true, "page"],
  ];
  for (const [form, accept, formspree, style] of table) {
    assert.equal(answerStyle(form, accept, formspree), style, `${form} ${accept} ${formspree}`);
  }
});

Deno.test("JSON-style answers to a form ignore its redirect targets: never a 303", async () => {
  const answers = answersOf("json", {}, { success: "/thanks", error: "/sorry" });
  const success = answers.success();
  assert.equal(success.status, 200);
  assert.deepEqual(await success.json(), { ok: true });
  const refused = answers.error("field_required", { field: "message" });
  assert.equal(refused.status, 400);
  assert.equal(refused.headers.get("location"), null);
  assert.equal((await refused.json()).error, "field_required");
});

Deno.test("Formspree-style answers: success {ok, next}, a refusal with errors[{message, code, field}] beside contactd's fields", async () => {
  const cors = { "access-control-allow-origin": "https://site.example", vary: "Origin" };
  const answers = answersOf("formspree", cors, { success: "https://site.example/thanks" });
  const success = answers.success();
  assert.equal(success.status, 200);
  assert.equal(success.headers.get("access-control-allow-origin"), "https://site.example");
  assert.deepEqual(await success.json(), { ok: true, next: "https://site.example/thanks" });
  // No target: `next` is still a string (what @formspree/core takes for success).
  assert.deepEqual(await answersOf("formspree").success().json(), { ok: true, next: "" });

  const field = answers.error("field_required", {
    field: "message",
    message: "message is required.",
  });
  assert.equal(field.status, 400);
  assert.equal(field.headers.get("vary"), "Origin");
  assert.deepEqual(await field.json(), {
    ok: false,
    error: "field_required",
    field: "message",
    message: "message is required.",
    errors: [{ message: "message is required.", code: "REQUIRED_FIELD_EMPTY", field: "message" }],
  });
  const limited = answers.error("rate_limited", { headers: { "retry-after": "7" } });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("retry-after"), "7");
  assert.deepEqual(await limited.json(), {
    ok: false,
    error: "rate_limited",
    message: ERRORS.rate_limited.message,
    errors: [{ message: ERRORS.rate_limited.message, code: "rate_limited" }],
  });
  const saved = await answersOf("formspree").error("delivery_failed").json();
  assert.equal(saved.stored, true);
  assert.equal(saved.errors[0].code, "delivery_failed");
});

Deno.test("a page-style answer tells the site's owner about a target it could not use", async () => {
  const note = "(For the site's owner: …)";
  const answers = answersOf("page", {}, { unresolved: note });
  assert.equal(await answers.success().text(), `Thank you. Your message was sent.\n\n${note}\n`);
  const refused = answers.error("field_required");
  assert.equal(refused.status, 400);
  assert.equal(await refused.text(), `${ERRORS.field_required.message}\n\n${note}\n`);
});
