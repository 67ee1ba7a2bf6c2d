/**
 * The case page (`GET /api/case/<token>`): server-rendered HTML without script, readable on a
 * phone, showing only what the sender wrote and what the owner sent, in order, with their times
 * (UTC), then a form to write back (or a line saying the case is closed). Every text is escaped;
 * the headers forbid caching, referrers, indexing, framing and everything but inline style.
 *
 * @module
 */
import { LIMITS } from "../form/submission.ts";

/** One post as the page shows it. */
export interface PagePost {
  /** When it was written (`2026-11-27T10:00:00Z`). */
  readonly ts: string;
  readonly author: "sender" | "owner";
  readonly text: string;
}

/** What a page shows. */
export interface PageView {
  /** Where the form posts (the page's own path). */
  readonly action: string;
  readonly posts: readonly PagePost[];
  /** Closed for writing (the owner marked it Handled or Spam): no form. */
  readonly closed: boolean;
  /** A line above the conversation: after a submission or follow-up, or a refusal's sentence. */
  readonly notice?: { readonly kind: "sent" | "error"; readonly text: string } | undefined;
}

/** The line shown after the first submission or a follow-up. */
export const SENT_NOTICE = "Thank you. Your message was sent. Keep this page's address " +
  "(bookmark it): replies appear here, and you can write back. Anyone with the address can " +
  "read it.";

/** The line shown instead of the form on a closed case. */
export const CLOSED_NOTICE = "This conversation is closed: no new messages can be written here.";

// Inline style only: the CSP allows nothing else (no script, no images, no fonts, no requests).
const STYLE = "body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:0 auto;" +
  "padding:1rem;color:#111;background:#fff}.post{border:1px solid #ccc;border-radius:.5rem;" +
  "padding:.5rem .75rem;margin:.75rem 0}.owner{background:#eef5ff}.who{font-size:.85rem;" +
  "color:#555}.text{white-space:pre-wrap;overflow-wrap:anywhere}textarea{width:100%;" +
  "box-sizing:border-box;font:inherit}.notice{padding:.5rem .75rem;border-radius:.5rem;" +
  "background:#eefbe9}.error{background:#fdecea}.hp{position:absolute;left:-10000px}";

/** The headers of a case page: never cached, no referrer, not indexed, a strict CSP. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-robots-tag": "noindex, nofollow",
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; " +
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
});

/** `text` safe in HTML text and in a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => _ENTITIES[char]!);
}

const _ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** A time as the page shows it: `2026-11-27 10:00 UTC`. */
function _time(ts: string): string {
  const match = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)/.exec(ts);
  return match === null ? ts : `${match[1]} ${match[2]} UTC`;
}

/** The page's HTML. */
export function renderCasePage(view: PageView): string {
  const posts = view.posts.map((post) =>
    `<div class="post ${post.author}"><div class="who">${
      post.author === "owner" ? "Reply" : "You wrote"
    } · <time datetime="${escapeHtml(post.ts)}">${escapeHtml(_time(post.ts))}</time></div>` +
    `<div class="text">${escapeHtml(post.text)}</div></div>`
  ).join("\n");
  const notice = view.notice === undefined
    ? ""
    : `<p class="notice${view.notice.kind === "error" ? " error" : ""}" role="status">${
      escapeHtml(view.notice.text)
    }</p>\n`;
  const form = view.closed ? `<p>${escapeHtml(CLOSED_NOTICE)}</p>` : `<form method="post" ` +
    `action="${escapeHtml(view.action)}"><label for="message">Write back</label>` +
    `<textarea id="message" name="message" rows="6" maxlength="${LIMITS.message}" required>` +
    `</textarea><label class="hp" aria-hidden="true">Leave empty <input name="website" ` +
    `tabindex="-1" autocomplete="off"></label><p><button type="submit">Send</button></p></form>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>Your conversation</title><style>${STYLE}</style></head>
<body><h1>Your conversation</h1>
${notice}${posts}
${form}
</body></html>
`;
}
