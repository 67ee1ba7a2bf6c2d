/**
 * Where the example form (`examples/contact.html`) lives: what `SERVE_EXAMPLE=1` reads at
 * start-up (lib/service/service.ts) and what the permission flags let it read
 * (lib/config/permissions.ts). lib/http/example_page.ts serves the bytes.
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
