/**
 * `deno task bench`: contactd against a bare `Deno.serve` and a same-I/O floor, in one run on
 * loopback, driven by wrk at fixed concurrency. Prints a Markdown table with the ratios that
 * count (absolute numbers depend on the machine).
 *
 * @module
 */
import { floodControl, startBenchApi } from "./fake_api.ts";
import { countLines, type Server, startContactd, startFloor } from "./processes.ts";
import { measureSync } from "./sync.ts";
import { ensureWrk, type Load, runWrk, type WrkResult } from "./wrk.ts";

const CONNECTIONS = 16;
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 5);
const WARMUP = 1;
const MILLION = Number(Deno.env.get("BENCH_ADDRESSES") ?? 1_000_000);

const VALID = JSON.stringify({
  name: "Ann Example",
  contact: "ann@example.org",
  message: "Hello! I would like to know more about your services. ".repeat(4).trim(),
});
const HONEYPOT = JSON.stringify({ name: "bot", message: "buy now", website: "http://spam.test" });
const INVALID = JSON.stringify({ name: "Ann", contact: "", message: "   " });

let nextPrefix = 11;
/** Warms up, then measures; every run gets fresh client addresses. */
async function measure(server: Server, load: Omit<Load, "url" | "connections" | "seconds">) {
  const base = { url: server.url, connections: CONNECTIONS, ...load };
  await runWrk({ ...base, seconds: WARMUP, prefix: nextPrefix++ });
  return await runWrk({ ...base, seconds: SECONDS, prefix: nextPrefix++ });
}

const rows: string[][] = [];
const ms = (us: number) => (us / 1000).toFixed(2);
const rps = (r: WrkResult) => r.requests / (r.duration_us / 1e6);
function row(name: string, server: string, r: WrkResult, errors: number, ratio: string) {
  rows.push([name, server, rps(r).toFixed(0), ms(r.p50_us), ms(r.p99_us), String(errors), ratio]);
}
function ratio(value: number, target: number, note = ""): string {
  return `${value.toFixed(2)} ${value >= target ? "≥" : "**<**"} ${target}${note}`;
}

await ensureWrk();
const cores = navigator.hardwareConcurrency;
console.log(`contactd benchmark: ${cores} cores, wrk -t1 -c${CONNECTIONS}, ${SECONDS} s per case`);

const api = startBenchApi();
const slowApi = startBenchApi(429, floodControl(3600), 100);
const floor = await startFloor(api.url);
const contactd = await startContactd(api.url);

// Memory first, in its own process, so its peak is the million addresses' alone.
const memory = await startContactd(api.url);
const million = await runWrk({
  url: memory.url,
  method: "POST",
  path: "/api/contact",
  body: HONEYPOT,
  addresses: "v4",
  prefix: 10,
  connections: CONNECTIONS,
  seconds: 600,
  limit: MILLION,
});
const afterMillion = await memory.memory();
const millionAt = performance.now();

// Health: the floor is a bare Deno.serve answering the same JSON.
const floorHealth = await measure(floor, { path: "/api/health" });
row("health", "bare Deno.serve", floorHealth, floorHealth.socket_errors + floorHealth.non_2xx, "1");
const health = await measure(contactd, { path: "/api/health" });
row(
  "health",
  "contactd",
  health,
  health.socket_errors + health.non_2xx,
  ratio(rps(health) / rps(floorHealth), 0.8),
);

// Cheap refusals, a new client address on every request.
const post = { method: "POST", path: "/api/contact" } as const;
const honeypot = await measure(contactd, { ...post, body: HONEYPOT, addresses: "v4" });
row(
  "honeypot, new address each",
  "contactd",
  honeypot,
  honeypot.socket_errors + honeypot.non_2xx,
  ratio(rps(honeypot) / rps(floorHealth), 0.6, " × bare health"),
);
// Every address is new but all share one /64, which has used its 5 POSTs: all refused.
for (let i = 0; i < 5; i++) {
  await fetch(`${contactd.url}/api/contact`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-real-ip": `2001:db8:${nextPrefix.toString(16)}::1`,
    },
    body: HONEYPOT,
  }).then((r) => r.body?.cancel());
}
const limited = await runWrk({
  url: contactd.url,
  ...post,
  body: HONEYPOT,
  addresses: "v6",
  prefix: nextPrefix,
  connections: CONNECTIONS,
  seconds: WARMUP,
});
const refused = await runWrk({
  url: contactd.url,
  ...post,
  body: HONEYPOT,
  addresses: "v6",
  prefix: nextPrefix++,
  connections: CONNECTIONS,
  seconds: SECONDS,
});
void limited;
row(
  "429, new address each (one /64)",
  "contactd",
  refused,
  refused.socket_errors + refused.requests - refused.non_2xx,
  ratio(rps(refused) / rps(floorHealth), 0.6, " × bare health"),
);
const invalid = await measure(contactd, { ...post, body: INVALID, addresses: "v4" });
row(
  "400, new address each",
  "contactd",
  invalid,
  invalid.socket_errors + invalid.requests - invalid.non_2xx,
  ratio(rps(invalid) / rps(floorHealth), 0.6, " × bare health"),
);

// Valid submissions: fetch + append + fsync per request.
const floorValid = await measure(floor, { ...post, body: VALID, addresses: "v4" });
row(
  "valid, synced",
  "floor: fetch + append + fsync",
  floorValid,
  floorValid.socket_errors + floorValid.non_2xx,
  "1",
);
const valid = await measure(contactd, { ...post, body: VALID, addresses: "v4" });
row(
  "valid, synced",
  "contactd",
  valid,
  valid.socket_errors + valid.non_2xx,
  ratio(rps(valid) / rps(floorValid), 0.7, " × floor"),
);

// A flood while the API answers 429 retry_after 3600 after 100 ms.
const flooded = await startContactd(slowApi.url);
const before = await flooded.memory();
const flood = await measure(flooded, { ...post, body: VALID, addresses: "v4" });
const after = await flooded.memory();
const records = await countLines(flooded.file);
row(
  "valid, API says 429 retry_after 3600",
  "contactd",
  flood,
  flood.socket_errors + flood.requests - flood.non_2xx,
  `p99 ${ms(flood.p99_us)} ms ${flood.p99_us < 50_000 ? "<" : "**≥**"} 50 ms`,
);

// The limiter's entries expire after 60 s; then one request lets it give the memory back.
const idle = 61_000 - (performance.now() - millionAt);
if (idle > 0) await new Promise((resolve) => setTimeout(resolve, idle));
await fetch(`${memory.url}/api/contact`, {
  method: "POST",
  headers: { "content-type": "application/json", "x-real-ip": "192.0.2.1" },
  body: HONEYPOT,
}).then((r) => r.body?.cancel());
await new Promise((resolve) => setTimeout(resolve, 1000));
const expired = await memory.memory();

const sync = await measureSync();

const header = ["case", "server", "req/s", "p50 ms", "p99 ms", "errors", "ratio (target)"];
const table = [header, header.map(() => "---"), ...rows].map((r) => `| ${r.join(" | ")} |`);
console.log(table.join("\n"));
console.log(`
- errors: socket errors plus answers with an unexpected status class
- memory: ${million.requests} honeypot POSTs from distinct addresses: peak RSS ${
  afterMillion.peak.toFixed(1)
} MiB ${afterMillion.peak <= 150 ? "≤" : "**>**"} 150; RSS ${
  afterMillion.current.toFixed(1)
} MiB after, ${expired.current.toFixed(1)} MiB once the entries expired (61 s later)
- flood: ${slowApi.calls()} API calls for ${flood.requests} submissions; ${records} records kept; RSS ${
  before.current.toFixed(1)
} → ${after.current.toFixed(1)} MiB
- start-up to first health answer (cached deno run): contactd ${
  contactd.startupMs.toFixed(0)
} ms, ${flooded.startupMs.toFixed(0)} ms, ${memory.startupMs.toFixed(0)} ms; bare floor ${
  floor.startupMs.toFixed(0)
} ms
${sync}`);

for (const server of [floor, contactd, memory, flooded]) await server.stop();
await api.close();
await slowApi.close();
