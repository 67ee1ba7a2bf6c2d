/**
 * `deno task bench` (last part): a large backup file. For each size (default 256 MiB and 1 GiB),
 * a backup file of realistic records is generated in a temporary directory (outside the
 * checkout, removed after), then the real processes run on it, each timed with its peak resident
 * memory: `contactd export` (JSON lines, CSV), `forget --dry-run` and `forget` with the service
 * stopped, the service's start with `RETENTION` (the rewrite at start, until its first health
 * answer), and `forget` while it runs. Prints a Markdown table. The goal: export's peak RSS at
 * most 150 MB, and forget's and retention's not growing with the file.
 *
 * Settings (environment): BENCH_BACKUP_MIB (default `256,1024`).
 *
 * @module
 */
import { exportFlags, forgetFlags } from "../lib/config/permissions.ts";
import { formatRecord } from "../lib/storage/backup.ts";
import { baseEnv, freePort, serviceCommand } from "../tests/support/service.ts";
import { startBenchApi } from "./fake_api.ts";
import { BENCH_TOKEN } from "./processes.ts";

const SIZES = (Deno.env.get("BENCH_BACKUP_MIB") ?? "256,1024").split(",").map(Number);
const MAIN = new URL("../main.ts", import.meta.url).pathname;
const DAY = 86_400_000;
/** One record in this many is the contact `forget` removes. */
const FORGOTTEN_EVERY = 50_000;
const GONE = "forget-me@example.org";
const MIB = 1 << 20;

/** One run's figures. */
interface Run {
  readonly seconds: number;
  /** Peak resident memory, MiB. */
  readonly peakMib: number;
  readonly detail: string;
}

/**
 * Writes about `mib` MiB of records to `path`: ~1 KiB each, spread evenly over the last 100 days
 * (so `RETENTION=90d` drops the oldest tenth); returns how many.
 */
async function generate(path: string, mib: number): Promise<number> {
  const now = Date.now();
  const message = "Hello, I would like to know more about your services and prices. ".repeat(12);
  const sample = (i: number, ts: number) =>
    formatRecord({
      ts: new Date(ts).toISOString().slice(0, 19) + "Z",
      id: `r${i.toString(36).padStart(8, "0")}`,
      name: `Ann Example ${i}`,
      contact: i % FORGOTTEN_EVERY === 1 ? GONE : `ann${i}@example.org`,
      message,
      ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      messenger_ok: true,
      messenger_error: null,
    });
  // A record of the middle, whose id and address have their full length.
  const count = Math.round(mib * MIB / new TextEncoder().encode(sample(1 << 20, now)).byteLength);
  const encoder = new TextEncoder();
  using file = await Deno.open(path, { write: true, createNew: true, mode: 0o600 });
  let batch = "";
  for (let i = 0; i < count; i++) {
    batch += sample(i, now - 100 * DAY + Math.floor(i * 99 * DAY / count));
    if (batch.length >= 8 * MIB || i === count - 1) {
      const bytes = encoder.encode(batch);
      for (let at = 0; at < bytes.byteLength;) at += await file.write(bytes.subarray(at));
      batch = "";
    }
  }
  return count;
}

/** Runs `deno run <flags> main.ts <args>` to its end: wall time and peak RSS (`time -v`). */
async function command(flags: string[], args: string[], file: string): Promise<Run> {
  const exporting = args[0] === "export"; // its output is not kept: only its count, on stderr
  const report = `${file}.time`;
  const started = performance.now();
  const output = await new Deno.Command("/usr/bin/time", {
    args: ["-f", "%M", "-o", report, Deno.execPath(), "run", ...flags, MAIN, ...args],
    clearEnv: true,
    env: { ...baseEnv(), MESSAGES_FILE: file },
    stdin: "null",
    stdout: exporting ? "null" : "piped",
    stderr: "piped",
  }).output();
  const seconds = (performance.now() - started) / 1000;
  const kib = Number((await Deno.readTextFile(report)).trim().split("\n").at(-1));
  await Deno.remove(report);
  const stderr = new TextDecoder().decode(output.stderr).trim();
  const stdout = exporting ? "" : new TextDecoder().decode(output.stdout).trim();
  if (!output.success) {
    // A failure is a figure too (the release before streaming failed here): said in the table.
    const why = `${stderr} ${stdout}`.trim().split("\n").at(-1)!.slice(0, 120);
    return { seconds, peakMib: kib / 1024, detail: `**failed** (exit ${output.code}): ${why}` };
  }
  const detail = (exporting ? stderr : stdout).split("\n")[0]!.replace(/ from \S+/, "");
  return { seconds, peakMib: kib / 1024, detail };
}

/** The peak and current RSS of process `pid`, MiB. */
async function memoryOf(pid: number): Promise<{ peak: number; current: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = (key: string) => Number(status.match(new RegExp(`${key}:\\s+(\\d+)`))?.[1]);
  return { peak: kib("VmHWM") / 1024, current: kib("VmRSS") / 1024 };
}

/**
 * The service on `file` with `RETENTION=90d`: from spawn to its first health answer (retention
 * runs at start, before it listens), then `forget` while it runs; each with the service's peak
 * RSS (VmHWM) after it.
 */
async function service(file: string, apiUrl: string): Promise<{ start: Run; forget: Run }> {
  const port = freePort();
  const { args, env } = serviceCommand({
    PORT: String(port),
    MESSAGES_FILE: file,
    MESSENGER_BOT_TOKEN: BENCH_TOKEN,
    MESSENGER_CHAT_ID: "1",
    MESSENGER_API_URL: apiUrl,
    RETENTION: "90d",
  });
  const began = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let exited = false;
  const status = child.status.then(() => (exited = true));
  try {
    while (true) {
      if (exited) throw new Error(`the service exited at start (${file})`);
      const response = await fetch(`http://127.0.0.1:${port}/api/health`).catch(() => undefined);
      await response?.body?.cancel();
      if (response?.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const start: Run = {
      seconds: (performance.now() - began) / 1000,
      peakMib: (await memoryOf(child.pid)).peak,
      detail: `RETENTION=90d: the backup file rewritten at start to ${
        ((await Deno.stat(file)).size / MIB).toFixed(0)
      } MiB, then the first health answer`,
    };
    const ran = await command(forgetFlags({ messagesFile: file }), [
      "forget",
      "--contact",
      GONE,
    ], file);
    const forget: Run = {
      seconds: ran.seconds,
      peakMib: (await memoryOf(child.pid)).peak,
      detail: ran.detail.startsWith("**failed**")
        ? ran.detail
        : `service's peak after it; the command's own ${ran.peakMib.toFixed(0)} MiB`,
    };
    return { start, forget };
  } finally {
    if (!exited) child.kill("SIGTERM");
    await status;
  }
}

const rows: string[][] = [];
const api = startBenchApi();
const began = performance.now();
for (const mib of SIZES) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-big-backup-" });
  const file = `${dir}/messages.jsonl`;
  try {
    const t = performance.now();
    const records = await generate(file, mib);
    const size = (await Deno.stat(file)).size;
    const label = `${(size / MIB).toFixed(0)} MiB (${records} records)`;
    console.error(`${label} generated in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const add = (name: string, run: Run) => {
      rows.push([
        label,
        name,
        run.seconds.toFixed(1),
        run.peakMib.toFixed(0),
        run.detail.replace(/^contactd \w+: /, ""),
      ]);
      console.error(`${label} ${name}: ${run.seconds.toFixed(1)} s, ${run.peakMib.toFixed(0)} MiB`);
    };
    const read = exportFlags({ messagesFile: file });
    add("export (JSON lines)", await command(read, ["export"], file));
    add("export --format csv", await command(read, ["export", "--format", "csv"], file));
    const own = forgetFlags({ messagesFile: file });
    add(
      "forget --dry-run (stopped)",
      await command(own, ["forget", "--contact", GONE, "--dry-run"], file),
    );
    // One more record of the contact, so forget has something to remove in each run.
    const again = (text: string) => Deno.writeTextFile(file, text, { append: true });
    add("forget (stopped)", await command(own, ["forget", "--contact", GONE], file));
    await again(
      formatRecord({
        ts: new Date().toISOString().slice(0, 19) + "Z",
        id: "again",
        name: "Ann",
        contact: GONE,
        message: "again",
        ip: "10.0.0.1",
        messenger_ok: true,
        messenger_error: null,
      }),
    );
    const { start, forget } = await service(file, api.url);
    add("service start, RETENTION (stopped → running)", start);
    add("forget (service running)", forget);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
await api.close();

const header = ["backup file", "run", "wall s", "peak RSS MiB", "note"];
const table = [header, header.map(() => "---"), ...rows].map((r) => `| ${r.join(" | ")} |`);
console.log(
  `\n${table.join("\n")}\n\nPeak RSS: the process's own (/usr/bin/time, or VmHWM for the ` +
    `service). Whole run: ${((performance.now() - began) / 1000).toFixed(0)} s.`,
);
