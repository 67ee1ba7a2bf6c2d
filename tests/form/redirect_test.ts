import assert from "node:assert/strict";
import {
  parseRedirectTarget,
  REDIRECT_MAX_LENGTH,
  withErrorCode,
} from "../../lib/form/redirect.ts";

const ALLOWED = ["https://site.example", "http://localhost:8080"];

Deno.test("parseRedirectTarget accepts a relative path and an allowed origin's URL", () => {
  assert.equal(parseRedirectTarget("/thanks.html", ALLOWED), "/thanks.html");
  assert.equal(parseRedirectTarget("/contact/?sent=1#top", ALLOWED), "/contact/?sent=1#top");
  assert.equal(parseRedirectTarget("/a/../thanks", ALLOWED), "/thanks");
  assert.equal(
    parseRedirectTarget("https://site.example/thanks", ALLOWED),
    "https://site.example/thanks",
  );
  assert.equal(
    parseRedirectTarget("HTTPS://SITE.example:443/x", ALLOWED),
    "https://site.example/x",
  );
  assert.equal(
    parseRedirectTarget("http://localhost:8080/ok", ALLOWED),
    "http://localhost:8080/ok",
  );
});

Deno.test("parseRedirectTarget never returns another host: open-redirect tricks are refused", () => {
  const hostile = [
    "//evil.com",
    "//evil.com/thanks",
    "/\\evil.com",
    "\\\\evil.com",
    "/\\/evil.com",
    "/a/..//evil.com",
    "/.//evil.com",
    "https://evil.com",
    "https://evil.com/thanks",
    "https://site.example.evil.com/",
    "https://site.example@evil.com/",
    "https://user:pw@site.example/",
    "http://site.example/", // listed as https only
    "https://site.example:8443/",
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "/thanks\r\nSet-Cookie: x=1",
    "/thanks\nLocation: https://evil.com",
    "/\t/evil.com",
    "/ /evil.com",
    " /thanks",
    "thanks.html",
    "evil.com",
    "/th\u00e4nks",
    "/\u2215evil.com",
    "",
    "/" + "a".repeat(REDIRECT_MAX_LENGTH),
  ];
  for (const raw of hostile) {
    assert.equal(parseRedirectTarget(raw, ALLOWED), undefined, JSON.stringify(raw));
  }
  assert.equal(parseRedirectTarget(undefined, ALLOWED), undefined);
  assert.equal(parseRedirectTarget("https://site.example/", []), undefined);
});

Deno.test("a relative target resolves against the service's own origin in a browser", () => {
  for (
    const raw of ["/thanks", "/a/../b/./c?x=//e#y", "/%2F%2Fevil.com", "/;@evil.com", "/..//x"]
  ) {
    const target = parseRedirectTarget(raw, []) ?? "/";
    assert.equal(
      new URL(target, "https://contactd.example/api/contact").origin,
      "https://contactd.example",
    );
  }
});

Deno.test("withErrorCode sets error=<code> and keeps the target's origin", () => {
  assert.equal(withErrorCode("/sorry.html", "rate_limited"), "/sorry.html?error=rate_limited");
  assert.equal(
    withErrorCode("/sorry?lang=en&error=x#f", "field_too_long"),
    "/sorry?lang=en&error=field_too_long#f",
  );
  assert.equal(
    withErrorCode("https://site.example/sorry", "delivery_failed"),
    "https://site.example/sorry?error=delivery_failed",
  );
});
