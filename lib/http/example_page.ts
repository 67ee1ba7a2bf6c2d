/**
 * The example form (`examples/contact.html`), served at `/` only with `SERVE_EXAMPLE=1`, for
 * trying contactd out (its bytes read once at start-up: lib/config/example_page.ts says where
 * from). In production the site serves its own copy.
 *
 * @module
 */
// The page needs its own inline script and style, and talks to this origin only.
const CSP = [
  "default-src 'none'",
  "script-src 'unsafe-inline'",
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** `GET`/`HEAD /`: the page bytes read at start-up, as HTML. */
export function examplePageResponse(page: Uint8Array, method: string): Response {
  return new Response(method === "HEAD" ? null : page.slice(), {
    status: 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "content-security-policy": CSP,
      "referrer-policy": "no-referrer",
    },
  });
}
