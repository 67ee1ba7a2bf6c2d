/**
 * Routing, health, and the last line of defence against unexpected errors.
 *
 * @module
 */
import { type ContactDeps, handleContact, type PeerInfo } from "./contact.ts";
import { errorResponse, jsonResponse } from "./errors.ts";
import { describeError } from "./log.ts";

/** The dependencies of the whole HTTP surface. */
export type HandlerDeps = Omit<ContactDeps, "onStorage">;

/** A `Deno.serve` handler with health state of its own. */
export type Handler = (request: Request, info: PeerInfo) => Promise<Response>;

const ROUTES: Readonly<Record<string, readonly string[]>> = {
  "/api/contact": ["POST"],
  "/api/health": ["GET", "HEAD"],
};

/** Builds the request handler. Health `ok` is false while the backup file cannot be written. */
export function createHandler(deps: HandlerDeps): Handler {
  let storageOk = true;
  const contactDeps: ContactDeps = { ...deps, onStorage: (ok) => (storageOk = ok) };

  return async (request, info) => {
    try {
      const path = pathOf(request.url);
      const methods = ROUTES[path];
      if (methods === undefined) return errorResponse("not_found");
      if (!methods.includes(request.method)) {
        return errorResponse("method_not_allowed", { headers: { allow: methods.join(", ") } });
      }
      if (path === "/api/health") {
        return jsonResponse(200, { ok: storageOk, configured: deps.deliver !== undefined });
      }
      return await handleContact(contactDeps, request, info);
    } catch (error) {
      deps.log("error", { event: "internal_error", status: 500, error: describeError(error) });
      return errorResponse("internal");
    }
  };
}

// The same few URLs (one Host, two paths) arrive over and over: parse each once. Keyed by the
// exact URL text, so the answer is always what `new URL` says; cleared when full.
const paths = new Map<string, string>();
const MAX_PATHS = 256;

/** `new URL(url).pathname`, remembered for recently seen URLs. */
function pathOf(url: string): string {
  let path = paths.get(url);
  if (path === undefined) {
    path = new URL(url).pathname;
    if (paths.size >= MAX_PATHS) paths.clear();
    paths.set(url, path);
  }
  return path;
}
