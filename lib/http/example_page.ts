/**
 * The example form (`examples/contact.html`), served at `/` only with `SERVE_EXAMPLE=1`, for
 * trying contactd out. In production the site serves its own copy.
 *
 * @module
 */
import { fileURLToPath } from "node:url";

/** Where the page lives: beside `lib/`, whatever the working directory. */
export const EXAMPLE_PAGE_URL = new URL("../../examples/contact.html", import.meta.url);

/** The page's absolute path, as `--allow-read` needs it and `Deno.readFile` reads it. */
export function examplePagePath(): string {
  return fileURLToPath(EXAMPLE_PAGE_URL);
}

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
