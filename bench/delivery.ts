/**
 * `deno task bench` (second part): delivery against the Telegram-like fake Bot API
 * (tests/support/fake_bot_api.ts: a bucket per chat, then `429 retry_after` until the block
 * ends). Bursts of submissions are timed until the last one reached the chat, as a ratio to the
 * least time the limits allow; then a long outage: answers while it lasts, memory before and
 * after, and the pace of redelivery once it is over. Prints a Markdown table.
 *
 * Settings (environment): BENCH_BURSTS (default `30,300`), BENCH_OUTAGE_SUBMISSIONS (1000),
 * BENCH_OUTAGE_SECONDS (60), BENCH_DRAIN_SECONDS (60: how long redelivery is watched after it).
 *
 * @module
 */
import { startFakeBotApi } from "../tests/support/fake_bot_api.ts";
import { TELEGRAM_LIMITS } from "../lib/delivery/pacer.ts";
import { BENCH_TOKEN, type Server, startContactd } from "./processes.ts";

const CHAT = 1; // a private chat: about one message a second after a short burst
const BURSTS = (Deno.env.get("BENCH_BURSTS") ?? "30,300").split(",").map(Number);
const OUTAGE_SUBMISSIONS = Number(Deno.env.get("BENCH_OUTAGE_SUBMISSIONS") ?? 1000);
const OUTAGE_SECONDS = Number(Deno.env.get("BENCH_OUTAGE_SECONDS") ?? 60);
const DRAIN_SECONDS = Number(Deno.env.get("BENCH_DRAIN_SECONDS") ?? 60);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const { burst, intervalMs } = TELEGRAM_LIMITS.chat;
/** The least time, in seconds, the per-chat limit allows for `n` messages sent at once. */
const minimumSeconds = (n: number) => Math.max(0, n - burst) * intervalMs / 1000;

async function post(server: Server, i: number, message: string) {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/contact`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-forwarded-for": `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    },
    body: JSON.stringify({ name: "Ann", contact: "ann@example.org", message }),
  });
  const body = await response.json();
  return { status: response.status, stored: body.stored === true, ms: performance.now() - started };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
};

const rows: string[][] = [];
const notes: string[] = [];
const began = performance.now();

for (const count of BURSTS) {
  const fake = startFakeBotApi({ token: BENCH_TOKEN, chatId: CHAT });
  const server = await startContactd(fake.url);
  try {
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: count }, (_, i) => post(server, i, `burst ${i}`)),
    );
    while (new Set(fake.delivered).size < count) await sleep(20);
    const seconds = (Math.max(...fake.deliveredAt) - started) / 1000;
    const ratio = seconds / minimumSeconds(count);
    const waited = answers.filter((a) => a.status === 200).length;
    rows.push([
      `burst of ${count}, ${count} addresses`,
      `${seconds.toFixed(1)} s (least ${minimumSeconds(count).toFixed(0)} s)`,
      `${ratio.toFixed(3)} × the least (${ratio <= 1.15 ? "≤" : "**above**"} 1.15)`,
      `${waited} answered 200, ${count - waited} 502 stored; p99 answer ${
        percentile(answers.map((a) => a.ms), 0.99).toFixed(0)
      } ms; ${fake.floods} × 429`,
    ]);
  } finally {
    await server.stop();
    await fake.close();
  }
}

{
  const fake = startFakeBotApi({ token: BENCH_TOKEN, chatId: CHAT });
  const server = await startContactd(fake.url, { MESSENGER_TIMEOUT_MS: "2000" });
  try {
    const before = await server.memory();
    await fake.outage("html");
    const outageStart = Date.now();
    const answers: Array<{ status: number; stored: boolean; ms: number }> = [];
    // Spread over the outage, a few at a time, each from a new address.
    const gap = (OUTAGE_SECONDS * 1000) / OUTAGE_SUBMISSIONS;
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < OUTAGE_SUBMISSIONS; i++) {
      const due = outageStart + i * gap;
      if (due > Date.now()) await sleep(due - Date.now());
      inFlight.push(post(server, 100_000 + i, `outage ${i}`).then((a) => void answers.push(a)));
    }
    await Promise.all(inFlight);
    const during = await server.memory();
    const remaining = outageStart + OUTAGE_SECONDS * 1000 - Date.now();
    if (remaining > 0) await sleep(remaining);
    await fake.outage(false);
    const recovered = Date.now();
    const stored = answers.filter((a) => a.stored).length;
    const latencies = answers.map((a) => a.ms);
    // Once the first tries have failed, the rest are answered without waiting for the API.
    const settled = answers.slice(10).map((a) => a.ms);
    await sleep(DRAIN_SECONDS * 1000);
    const delivered = new Set(fake.delivered).size;
    const after = await server.memory();
    // From recovery, the queue notices within about as long as the outage lasted (its probes
    // back off), then sends at the limit's pace.
    const firstAt = Math.min(...fake.deliveredAt.filter((at) => at >= recovered));
    const noticed = Number.isFinite(firstAt) ? (firstAt - recovered) / 1000 : NaN;
    const pace = Number.isFinite(firstAt)
      ? delivered / Math.max(1, (Date.now() - firstAt) / 1000)
      : 0;
    rows.push([
      `${OUTAGE_SUBMISSIONS} submissions during a ${OUTAGE_SECONDS} s outage`,
      `p99 answer ${percentile(settled, 0.99).toFixed(1)} ms (${
        percentile(settled, 0.99) < 50 ? "<" : "**not** <"
      } 50), p50 ${percentile(latencies, 0.5).toFixed(1)} ms`,
      `${stored} of ${answers.length} answered 502 stored`,
      `RSS ${before.current.toFixed(0)} → ${during.current.toFixed(0)} → ${
        after.current.toFixed(0)
      } MiB (before, end of outage, ${DRAIN_SECONDS} s after)`,
    ]);
    rows.push([
      `redelivery after that outage, watched ${DRAIN_SECONDS} s`,
      `first after ${noticed.toFixed(1)} s`,
      `${delivered} delivered, ${pace.toFixed(2)} a second (the limit: ${1000 / intervalMs})`,
      `the rest at the same pace: all ${OUTAGE_SUBMISSIONS} about ${
        (noticed + minimumSeconds(OUTAGE_SUBMISSIONS)).toFixed(0)
      } s after recovery; ${fake.floods} × 429`,
    ]);
  } finally {
    await server.stop();
    await fake.close();
  }
}

const header = ["delivery case", "time", "ratio / outcome", "details"];
const table = [header, header.map(() => "---"), ...rows].map((r) => `| ${r.join(" | ")} |`);
console.log(`
${table.join("\n")}
${notes.map((note) => `- ${note}`).join("\n")}
Delivery part: ${((performance.now() - began) / 1000).toFixed(0)} s.`);
