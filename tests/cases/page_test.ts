import assert from "node:assert/strict";
import {
  CLOSED_NOTICE,
  escapeHtml,
  PAGE_HEADERS,
  renderCasePage,
  SENT_NOTICE,
} from "../../lib/cases/page.ts";

const MARKUP = `<script>alert(1)</script><img src=x onerror="alert('x')">&amp;`;

Deno.test("every text on the page is escaped: the sender's, the owner's, the notice and the times", () => {
  const html = renderCasePage({
    action: "/api/case/abc",
    posts: [
      { ts: "2026-11-27T10:00:00Z", author: "sender", text: MARKUP },
      { ts: `<b>"x"</b>`, author: "owner", text: `${MARKUP}\nsecond line` },
    ],
    closed: false,
    notice: { kind: "error", text: MARKUP },
  });
  assert.ok(!html.includes("<script"), html);
  assert.ok(!html.includes("<img"), html);
  assert.ok(!html.includes("<b>"), html);
  assert.equal(html.split(escapeHtml(MARKUP)).length - 1, 3);
  assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
  assert.ok(html.includes("&amp;amp;"));
  assert.equal(escapeHtml(`&<>"'`), "&amp;&lt;&gt;&quot;&#39;");
});

Deno.test("the page shows the posts in order with their times, and a form posting to itself while open", () => {
  const html = renderCasePage({
    action: "/api/case/abc",
    posts: [
      { ts: "2026-11-27T10:00:00Z", author: "sender", text: "first" },
      { ts: "2026-11-27T11:30:00Z", author: "owner", text: "second" },
    ],
    closed: false,
    notice: { kind: "sent", text: SENT_NOTICE },
  });
  assert.ok(html.indexOf("first") < html.indexOf("second"));
  assert.ok(html.includes("2026-11-27 10:00 UTC") && html.includes("2026-11-27 11:30 UTC"));
  assert.ok(html.includes(`<form method="post" action="/api/case/abc">`));
  assert.ok(html.includes(`name="message"`));
  assert.ok(html.includes(`name="website"`), "the honeypot");
  assert.ok(html.includes(escapeHtml(SENT_NOTICE)));
  assert.ok(!/<script|<link|<img|src=|https?:/i.test(html), "nothing loads from anywhere");
  assert.ok(html.includes(`name="viewport"`), "readable on a phone");
});

Deno.test("a closed case shows no form, only the line saying it is closed", () => {
  const html = renderCasePage({
    action: "/api/case/abc",
    posts: [{ ts: "2026-11-27T10:00:00Z", author: "sender", text: "first" }],
    closed: true,
  });
  assert.ok(!html.includes("<form"));
  assert.ok(html.includes(escapeHtml(CLOSED_NOTICE)));
});

Deno.test("the page's headers forbid caching, referrers, indexing, framing, scripts and foreign form targets", () => {
  assert.equal(PAGE_HEADERS["cache-control"], "no-store");
  assert.equal(PAGE_HEADERS["referrer-policy"], "no-referrer");
  assert.match(PAGE_HEADERS["x-robots-tag"]!, /^noindex/);
  const csp = PAGE_HEADERS["content-security-policy"]!;
  for (
    const directive of [
      "default-src 'none'",
      "style-src 'unsafe-inline'",
      "form-action 'self'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ]
  ) assert.ok(csp.includes(directive), directive);
  assert.ok(!csp.includes("script-src"));
});
