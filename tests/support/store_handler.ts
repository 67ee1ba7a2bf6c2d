/**
 * The dependencies of a handler whose outbox commits what goes with a row into a real store (its
 * case, its lesson, its files' rows), as the service wires it, with every other I/O faked: for
 * the tests of the spam filter's hold and the files kept with it.
 *
 * @module
 */
import type { HandlerDeps } from "../../lib/http/handler.ts";
import { parseCidr } from "../../lib/common/ip.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { postBudget } from "../../lib/http/budgets.ts";
import { parseConfig } from "../../lib/config/config.ts";
import type { Store } from "../../lib/storage/store.ts";

/**
 * `deps` over the defaults: the clock at `now`, the production rate limit, every delivery
 * succeeding, the outbox committing its calls into `store`, no backup file, no log, no body
 * deadline.
 */
export function storeHandlerDeps(
  store: Pick<Store, "transaction">,
  now: number,
  deps: Partial<HandlerDeps> & Pick<HandlerDeps, "newId">,
): HandlerDeps {
  return {
    now: () => now,
    trustedProxies: [parseCidr("127.0.0.1/8")!],
    limiter: new RateLimiter(postBudget(parseConfig({}).rateLimit)),
    queue: { submit: () => Promise.resolve({ ok: true }) },
    outbox: {
      add: async (_submission, also = []) => void await store.transaction(also),
      recordedSoon: () => Promise.resolve(),
    },
    append: () => Promise.resolve(),
    log: () => {},
    bodyDeadline: () => new AbortController().signal,
    ...deps,
  };
}
