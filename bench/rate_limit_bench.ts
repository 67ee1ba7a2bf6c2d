/** Micro-benchmarks of the limiter and the client address (`deno bench`). */
import { clientAddress } from "../lib/net/client_address.ts";
import { parseCidr } from "../lib/common/ip.ts";
import { RateLimiter, rateLimitKey } from "../lib/net/rate_limit.ts";
import { postBudget } from "../lib/http/budgets.ts";
import { parseConfig } from "../lib/config/config.ts";

const limiter = new RateLimiter(postBudget(parseConfig({}).rateLimit)); // RATE_LIMIT unset
let n = 0;
let now = Date.now();
const nextV4 = () => {
  n = (n + 1) % 16_000_000;
  return `10.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
};

Deno.bench("limiter: take() for a new IPv4 address each time", { group: "limiter" }, () => {
  limiter.take(rateLimitKey(nextV4()), now++);
});
Deno.bench("limiter: take() refused (same key)", { group: "limiter" }, () => {
  limiter.take("192.0.2.1", now);
});
Deno.bench("limiter: rateLimitKey of an IPv6 address (/64)", { group: "limiter" }, () => {
  rateLimitKey(`2001:db8:1:2::${(n++ % 65535).toString(16)}`);
});

const trusted = [parseCidr("127.0.0.1/8")!, parseCidr("::1")!];
const headers = new Headers({ "x-forwarded-for": "203.0.113.7" });
const forwarded = new Headers({ "x-forwarded-for": "198.51.100.1, 203.0.113.7" });
Deno.bench(
  "client address: one X-Forwarded-For entry from a trusted peer",
  { group: "address" },
  () => {
    clientAddress("127.0.0.1", headers, trusted);
  },
);
Deno.bench("client address: X-Forwarded-For, IPv6 peer", { group: "address" }, () => {
  clientAddress("::1", forwarded, trusted);
});
