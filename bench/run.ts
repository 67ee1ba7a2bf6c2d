/**
 * `deno task bench`: contactd against a bare `Deno.serve` and a same-I/O floor, in one run on
 * loopback, driven by wrk at fixed concurrency. Prints a Markdown table with the ratios that
 * count (absolute numbers depend on the machine). Cases that are compared run interleaved, in
 * rounds, and each keeps its best round, so a noisy neighbour hurts both sides alike.
 *
 * @module
 */
import { floodControl, startBenchApi } from "./fake_api.ts";
import {
  checkoutCommand,
  countLines,
  type Server,
  startContactd,
  startFloor,
} from "./processes.ts";
import { storageLines } from "./storage_lines.ts";
import { measureSync } from "./sync.ts";
import { ensureWrk, type Load, runWrk, type WrkResult } from "./wrk.ts";

const CONNECTIONS = 16;
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 3);
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? 5);
const ADDRESSES = Number(Deno.env.get("BENCH_ADDRESSES") ?? 1_000_000);
/** The release valid submissions are compared with: the last before the SQLite store. */
const BASELINE = Deno.env.get("BENCH_BASELINE") ?? "6c90727519f94b0954740c1e4323c5b350b03870";
/** The slow disk of the health case: every database commit takes this much longer. */
const COMMIT_DELAY_MS = 4;

const VALID = JSON.stringify({
  name: "Ann Example",
  contact: "ann@example.org",
  message: "Hello! I would like to know more about your services. ".repeat(4).trim(),
});
const HONEYPOT = JSON.stringify({ name: "bot", message: "buy now", website: "http://spam.test" });
const INVALID = JSON.stringify({ name: "Ann", contact: "", message: "   " });
const POST = { method: "POST", path: "/api/contact" } as const;
/** The /64 whose addresses the 429 case uses; its budget is spent before the runs. */
const LIMITED_NET = 0xfff;

/** One measured case. */
interface Case {
  readonly name: string;
  readonly server: Server;
  readonly label: string;
  readonly load: Omit<Load, "url" | "connections" | "seconds">;
  /** Which status class counts as expected ("any": every answer, e.g. 200 or 502 stored). */
  readonly expect: "2xx" | "other" | "any";
}

let nextPrefix = 11;
/**
 * Runs `cases` interleaved for ROUNDS rounds (after a 1 s warm-up each); best round per case.
 * `each`, when given, receives every round's results, in the cases' order.
 */
async function rounds(cases: Case[], each?: WrkResult[][]): Promise<WrkResult[]> {
  const best: WrkResult[] = [];
  const run = (c: Case, seconds: number) =>
    runWrk({
      url: c.server.url,
      connections: CONNECTIONS,
      seconds,
      prefix: c.load.addresses === "v6" ? LIMITED_NET : nextPrefix++,
      ...c.load,
    });
  for (const c of cases) await run(c, 1);
  for (let round = 0; round < ROUNDS; round++) {
    const results: WrkResult[] = [];
    for (const [i, c] of cases.entries()) {
      const result = await run(c, SECONDS);
      results.push(result);
      if (best[i] === undefined || rps(result) > rps(best[i]!)) best[i] = result;
    }
    each?.push(results);
  }
  return best;
}

const rps = (r: WrkResult) => r.requests / (r.duration_us / 1e6);
const ms = (us: number) => (us / 1000).toFixed(2);
const errors = (c: Case, r: WrkResult) =>
  r.socket_errors +
  (c.expect === "any" ? 0 : c.expect === "2xx" ? r.non_2xx : r.requests - r.non_2xx);
const rows: string[][] = [];
function row(c: Case, r: WrkResult, ratio: string) {
  rows.push([
    c.name,
    c.label,
    rps(r).toFixed(0),
    ms(r.p50_us),
    ms(r.p99_us),
    `${errors(c, r)}`,
    ratio,
  ]);
}
function ratio(value: number, target: number, of: string): string {
  return `${value.toFixed(2)} × ${of} (${value >= target ? "≥" : "**below**"} ${target})`;
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function post(server: Server, ip: string, body = HONEYPOT) {
  const headers = { "content-type": "application/json", "x-forwarded-for": ip };
  await fetch(`${server.url}/api/contact`, { method: "POST", headers, body })
    .then((r) => r.body?.cancel());
}

await ensureWrk();
const started = performance.now();
console.log(
  `contactd benchmark: ${navigator.hardwareConcurrency} cores, wrk -t1 -c${CONNECTIONS}, ` +
    `best of ${ROUNDS} interleaved ${SECONDS} s rounds per case`,
);

const api = startBenchApi();
const slowApi = startBenchApi(429, floodControl(3600), 100);
/** The same for the storage cases, so the flood row counts its own calls alone. */
const pausedApi = startBenchApi(429, floodControl(3600), 100);
const floor = await startFloor(api.url);
const refusalFloor = await startFloor(api.url, "refusal");
const durableFloor = await startFloor(api.url, "durable");
const durableMainFloor = await startFloor(api.url, "durable-main");
const contactd = await startContactd(api.url);

// Memory first, in a process of its own, so its peak is the addresses' alone.
const memory = await startContactd(api.url);
const million = await runWrk({
  url: memory.url,
  ...POST,
  body: HONEYPOT,
  addresses: "v4",
  prefix: 10,
  connections: CONNECTIONS,
  seconds: 600,
  limit: ADDRESSES,
});
const afterMillion = await memory.memory();
const millionAt = performance.now();

// Health and the cheap refusals, each against the bare Deno.serve health.
for (let i = 0; i < 5; i++) await post(contactd, `2001:db8:${LIMITED_NET.toString(16)}::1`);
const bareHealth: Case = {
  name: "health",
  server: floor,
  label: "bare Deno.serve",
  load: { path: "/api/health" },
  expect: "2xx",
};
const cheap: Case[] = [
  { ...bareHealth, server: contactd, label: "contactd" },
  {
    name: "honeypot, new address each",
    server: contactd,
    label: "contactd",
    load: { ...POST, body: HONEYPOT, addresses: "v4" },
    expect: "2xx",
  },
  {
    name: "429, new address each (one /64)",
    server: contactd,
    label: "contactd",
    load: { ...POST, body: HONEYPOT, addresses: "v6" },
    expect: "other",
  },
  {
    name: "400, new address each",
    server: contactd,
    label: "contactd",
    load: { ...POST, body: INVALID, addresses: "v4" },
    expect: "other",
  },
];
// Context for the refusals: what reading the path, three headers, the peer and the body costs.
const bareRefusal: Case = {
  ...cheap[1]!,
  server: refusalFloor,
  label: "bare Deno.serve reading path, headers, peer, body",
};
const [bare, refusal, ...cheapResults] = await rounds([bareHealth, bareRefusal, ...cheap]);
row(bareHealth, bare!, "1");
row(bareRefusal, refusal!, `${(rps(refusal!) / rps(bare!)).toFixed(2)} × bare health`);
for (const [i, c] of cheap.entries()) {
  const r = cheapResults[i]!;
  const context = i === 0 ? "" : `; ${(rps(r) / rps(refusal!)).toFixed(2)} × bare reading`;
  row(c, r, ratio(rps(r) / rps(bare!), i === 0 ? 0.8 : 0.6, "bare health") + context);
}

// CHALLENGE=altcha: a fresh signed challenge (one SHA-256 and one HMAC), and a POST refused for
// want of a solution (after the honeypot, before validation), each against the bare health.
const altcha = await startContactd(api.url, {
  CHALLENGE: "altcha",
  CHALLENGE_SECRET: "YmVuY2gtY2hhbGxlbmdlLXNlY3JldC1rZXktMDEyMzQ1Njc4OQ",
});
const challengeCases: Case[] = [
  {
    name: "GET /api/challenge, new address each",
    server: altcha,
    label: "contactd, CHALLENGE=altcha",
    load: { path: "/api/challenge", addresses: "v4" },
    expect: "2xx",
  },
  {
    name: "403 challenge_required, new address each",
    server: altcha,
    label: "contactd, CHALLENGE=altcha",
    load: { ...POST, body: VALID, addresses: "v4" },
    expect: "other",
  },
];
const [bareAgain, ...challengeResults] = await rounds([bareHealth, ...challengeCases]);
for (const [i, c] of challengeCases.entries()) {
  const r = challengeResults[i]!;
  row(c, r, `${(rps(r) / rps(bareAgain!)).toFixed(2)} × bare health`);
}
await altcha.stop();

// Valid submissions while the API keeps the queue paused (429 retry_after 3600, after the first
// call): each is made durable (outbox row committed, backup record appended and synced) and
// answered 502 stored at once. (With a fast API the pacer sends one a second, and one sender a
// second waits out DELIVERY_WAIT_MS, 10 s, holding a connection: that measured the queue, not
// the storage, and moved the rate by half from one round to the next.) Against the floor of
// that I/O, and the release before the store, each started afresh.
const landed = await checkoutCommand(BASELINE);
const beforeName = BASELINE.slice(0, 7);
const contactdValid = await startContactd(pausedApi.url);
const contactdBefore = await startContactd(pausedApi.url, {}, landed);
const floorValid: Case = {
  name: "valid, synced",
  server: durableFloor,
  label: "floor: SQLite commit (worker) + append, each synced",
  load: { ...POST, body: VALID, addresses: "v4" },
  expect: "any",
};
const floorMainValid: Case = {
  ...floorValid,
  server: durableMainFloor,
  label: "floor: SQLite commit (HTTP thread) + append, each synced",
};
const valid: Case = { ...floorValid, server: contactdValid, label: "contactd" };
const validBefore: Case = { ...valid, server: contactdBefore, label: `contactd at ${beforeName}` };
const validRounds: WrkResult[][] = [];
const [floorResult, floorMainResult, validResult, beforeResult] = await rounds(
  [floorValid, floorMainValid, valid, validBefore],
  validRounds,
);
const bestFloor = Math.max(rps(floorResult!), rps(floorMainResult!));
row(floorValid, floorResult!, "1");
row(
  floorMainValid,
  floorMainResult!,
  `${(rps(floorMainResult!) / rps(floorResult!)).toFixed(2)} × floor (worker)`,
);
row(valid, validResult!, ratio(rps(validResult!) / bestFloor, 0.9, "the faster floor"));
// Noise: the same ratio round by round (each round runs both within seconds of each other).
const perRound = validRounds.map((r) => rps(r[2]!) / rps(r[3]!)).sort((a, b) => a - b);
row(
  validBefore,
  beforeResult!,
  `contactd ${(rps(validResult!) / rps(beforeResult!)).toFixed(2)} × this (best rounds); ` +
    `per round ${perRound[0]!.toFixed(2)}–${perRound.at(-1)!.toFixed(2)}`,
);
await contactdBefore.stop();
await contactdValid.stop();
await landed.remove();

// Health while valid submissions flood a service whose every database commit takes 4 ms
// longer (a slow disk; the queue paused as above, so every connection keeps posting): one connection asks /api/health back to back, alone and then during a
// flood on 16 connections, in interleaved rounds; the best p99 of each.
const slowDisk = await startContactd(pausedApi.url, {}, { commitDelayMs: COMMIT_DELAY_MS });
const probe = (seconds: number) =>
  runWrk({ url: slowDisk.url, path: "/api/health", connections: 1, seconds });
const floodSlow = (seconds: number) =>
  runWrk({
    url: slowDisk.url,
    ...POST,
    body: VALID,
    addresses: "v4",
    prefix: nextPrefix++,
    connections: CONNECTIONS,
    seconds,
  });
await probe(1);
await floodSlow(1);
let idleHealth: WrkResult | undefined;
let loadedHealth: WrkResult | undefined;
let slowFlood: WrkResult | undefined;
for (let round = 0; round < ROUNDS; round++) {
  const idle = await probe(SECONDS);
  // The flood starts first and ends after the probe, so the probe sees only loaded time.
  const flooding = floodSlow(SECONDS + 1);
  await sleep(500);
  const loaded = await probe(SECONDS);
  const flood = await flooding;
  if (idleHealth === undefined || idle.p99_us < idleHealth.p99_us) idleHealth = idle;
  if (loadedHealth === undefined || loaded.p99_us < loadedHealth.p99_us) {
    loadedHealth = loaded;
    slowFlood = flood;
  }
}
const slowName = `health, commits + ${COMMIT_DELAY_MS} ms`;
const healthCase = (label: string): Case => ({
  name: slowName,
  server: slowDisk,
  label,
  load: { path: "/api/health" },
  expect: "2xx",
});
row(healthCase("contactd, 1 connection, no other load"), idleHealth!, "1");
row(
  {
    ...valid,
    name: slowName,
    server: slowDisk,
    label: "contactd, the flood: valid POSTs, 16 connections",
  },
  slowFlood!,
  "",
);
row(
  healthCase("contactd, 1 connection, during the flood"),
  loadedHealth!,
  `p99 ${(loadedHealth!.p99_us / idleHealth!.p99_us).toFixed(2)} × unloaded (${
    loadedHealth!.p99_us <= 2 * idleHealth!.p99_us ? "≤" : "**above**"
  } 2)`,
);
await slowDisk.stop();

// A flood of valid submissions while the API answers 429 retry_after 3600 after 100 ms.
const flooded = await startContactd(slowApi.url);
const floodCase: Case = {
  ...valid,
  name: "valid, API answers 429 retry_after 3600",
  server: flooded,
  expect: "other",
};
// The first answer (100 ms) opens the window; wrk's latency correction would spread that one
// round trip over every client "waiting" behind it, so it falls in the warm-up, as elsewhere.
const floodLoad = { url: flooded.url, connections: CONNECTIONS, ...floodCase.load };
await runWrk({ ...floodLoad, seconds: 1, prefix: nextPrefix++ });
const before = await flooded.memory();
const recordsBefore = await countLines(flooded.file);
const flood = await runWrk({ ...floodLoad, seconds: SECONDS * 2, prefix: nextPrefix++ });
const after = await flooded.memory();
const records = await countLines(flooded.file) - recordsBefore;
row(
  floodCase,
  flood,
  `p99 ${ms(flood.p99_us)} ms (${flood.p99_us < 50_000 ? "<" : "**not** <"} 50)`,
);

// Idle keys expire 60 s after their last POST; one more request lets the limiter shrink.
await sleep(Math.max(0, 61_000 - (performance.now() - millionAt)));
await post(memory, "192.0.2.1");
// The old table is an ArrayBuffer: V8 frees it at its next major GC (its memory reducer runs
// one within seconds of the traffic dropping). Sample for up to 20 s.
const expiredAt = performance.now();
let expired = await memory.memory();
for (let i = 0; i < 20 && expired.current > afterMillion.current * 0.7; i++) {
  await sleep(1000);
  expired = await memory.memory();
}
const freedAfter = (performance.now() - expiredAt) / 1000;

const sync = await measureSync();
const startup = [floor, contactd, memory, flooded].map((s) => s.startupMs.toFixed(0));
const lines = await storageLines(BASELINE);
for (
  const server of [floor, refusalFloor, durableFloor, durableMainFloor, contactd, memory, flooded]
) {
  await server.stop();
}
await api.close();
await slowApi.close();
await pausedApi.close();

const header = ["case", "server", "req/s", "p50 ms", "p99 ms", "errors", "ratio (target)"];
const table = [header, header.map(() => "---"), ...rows].map((r) => `| ${r.join(" | ")} |`);
const mib = (n: number) => `${n.toFixed(1)} MiB`;
console.log(
  `
${table.join("\n")}

- errors: socket errors plus answers of an unexpected status class.
- memory: ${million.requests} honeypot POSTs, each from a new address: peak RSS ${
    mib(afterMillion.peak)
  } (${afterMillion.peak <= 150 ? "≤" : "**above**"} 150 MB); RSS ${mib(afterMillion.current)} ` +
    `right after, ${mib(expired.current)} ${freedAfter.toFixed(0)} s after the entries expired.
- flood: ${slowApi.calls()} Bot API calls for ${flood.requests} submissions answered, ` +
    `${records} records kept; RSS ${mib(before.current)} after the warm-up, ${
      mib(after.current)
    } at the end.
- start-up to the first health answer (deno run, cached): bare ${startup[0]} ms, ` +
    `contactd ${startup.slice(1).join(" / ")} ms.

${sync}

${lines}

Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
);
