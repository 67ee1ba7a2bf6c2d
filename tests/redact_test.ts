import assert from "node:assert/strict";
import { redact } from "../lib/redact.ts";

const TOKEN = "123456:ABC-def_ghi";

Deno.test("redact replaces every occurrence of the secret", () => {
  assert.equal(
    redact(`bot${TOKEN}/sendMessage and again ${TOKEN}`, TOKEN),
    "bot<redacted>/sendMessage and again <redacted>",
  );
});

Deno.test("redact replaces the URL-encoded form of the secret", () => {
  assert.equal(redact("url /bot123456%3AABC-def_ghi/getMe", TOKEN), "url /bot<redacted>/getMe");
});

Deno.test("redact matches percent-escapes in lower-case hex too", () => {
  assert.equal(redact("/bot123456%3aABC-def_ghi/getMe", TOKEN), "/bot<redacted>/getMe");
});

Deno.test("redact with an empty secret leaves the text unchanged", () => {
  assert.equal(redact("nothing to hide", ""), "nothing to hide");
});

Deno.test("redact leaves text without the secret unchanged", () => {
  assert.equal(redact("123456:ABC-def_gh (one short)", TOKEN), "123456:ABC-def_gh (one short)");
});

Deno.test("redact treats regex metacharacters in the secret literally", () => {
  assert.equal(redact("a.b a+b a.b", "a.b"), "<redacted> a+b <redacted>");
  assert.equal(redact("x(y]z$1 xyz", "(y]z$1"), "x<redacted> xyz");
});

Deno.test("redact prefers the longer encoded form when the secret contains %", () => {
  // "a%" encodes to "a%25"; matching the raw form first would leave "25" behind.
  assert.equal(redact("[a%25] [a%]", "a%"), "[<redacted>] [<redacted>]");
});

Deno.test("redact copes with a secret containing a lone surrogate", () => {
  assert.equal(redact("x\uD800y", "\uD800"), "x<redacted>y");
});

Deno.test("redact handles a secret adjacent to itself", () => {
  assert.equal(redact(TOKEN + TOKEN, TOKEN), "<redacted><redacted>");
});
