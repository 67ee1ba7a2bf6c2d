import assert from "node:assert/strict";
import {
  pageOrigin,
  parseRedirectTarget,
  REDIRECT_MAX_LENGTH,
  redirectTargets,
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

Deno.test("pageOrigin: the request's Origin, else its Referer's origin; allowed, here (contactd's own host or unknown) or foreign", () => {
  const allowed = ["https://site.example"];
  const host = "contact.example";
  assert.deepEqual(pageOrigin("https://site.example", null, host, allowed), {
    kind: "allowed",
    origin: "https://site.example",
  });
  assert.deepEqual(pageOrigin(null, "https://site.example/contact?x=1", host, allowed), {
    kind: "allowed",
    origin: "https://site.example",
  });
  // The Origin wins over the Referer.
  assert.deepEqual(pageOrigin("https://other.example", "https://site.example/", host, allowed), {
    kind: "foreign",
    origin: "https://other.example",
  });
  assert.deepEqual(pageOrigin(null, null, host, allowed), { kind: "here" });
  assert.deepEqual(pageOrigin(null, "not a url", host, allowed), { kind: "here" });
  assert.deepEqual(pageOrigin("https://contact.example", null, "Contact.example", []), {
    kind: "here",
  });
  assert.deepEqual(pageOrigin("http://127.0.0.1:8787", null, "127.0.0.1:8787", []), {
    kind: "here",
  });
  for (const origin of ["https://site.example", "null", "http://contact.example:8080"]) {
    assert.deepEqual(pageOrigin(origin, null, host, []), { kind: "foreign", origin });
  }
  assert.deepEqual(pageOrigin("https://site.example", null, null, []), {
    kind: "foreign",
    origin: "https://site.example",
  });
});

Deno.test("redirectTargets resolves a path against an allowed page's origin, keeps it on contactd's own, and never uses it from a foreign page", () => {
  const named = { _redirect: "/thanks.html", _next: undefined, _redirect_error: "/sorry?x=1" };
  const site = { kind: "allowed", origin: "https://site.example" } as const;
  assert.deepEqual(redirectTargets(named, ["https://site.example"], site), {
    success: "https://site.example/thanks.html",
    error: "https://site.example/sorry?x=1",
  });
  assert.deepEqual(redirectTargets(named, [], { kind: "here" }), {
    success: "/thanks.html",
    error: "/sorry?x=1",
  });
  const foreign = redirectTargets(named, [], { kind: "foreign", origin: "https://site.example" });
  assert.equal(foreign.success, undefined);
  assert.equal(foreign.error, undefined);
  assert.match(foreign.unresolved!, /_redirect "\/thanks\.html" was not used/);
  assert.match(foreign.unresolved!, /https:\/\/site\.example, which ALLOWED_ORIGINS does not list/);
  // An absolute target on an allowed origin needs no page; _next stands in for _redirect.
  assert.deepEqual(
    redirectTargets(
      { _redirect: undefined, _next: "https://site.example/t", _redirect_error: undefined },
      ["https://site.example"],
      { kind: "foreign", origin: "https://elsewhere.example" },
    ),
    { success: "https://site.example/t" },
  );
  const next = redirectTargets(
    { _redirect: undefined, _next: "/t", _redirect_error: undefined },
    [],
    { kind: "foreign", origin: "https://x.example" },
  );
  assert.match(next.unresolved!, /this form's _next "\/t"/);
  // Dot segments cannot climb out of the allowed origin.
  assert.deepEqual(
    redirectTargets(
      { _redirect: "/a/../../x", _next: undefined, _redirect_error: undefined },
      ["https://site.example"],
      site,
    ),
    { success: "https://site.example/x" },
  );
});
