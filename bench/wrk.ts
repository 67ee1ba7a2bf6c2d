/**
 * The load generator: Debian's `wrk`, installed with apt-get when missing, driven by load.lua.
 *
 * @module
 */

const SCRIPT = new URL("./load.lua", import.meta.url).pathname;

/** One wrk run, as load.lua's done() reports it. */
export interface WrkResult {
  readonly requests: number;
  readonly duration_us: number;
  readonly p50_us: number;
  readonly p99_us: number;
  readonly max_us: number;
  readonly socket_errors: number;
  /** Answers outside 2xx/3xx. */
  readonly non_2xx: number;
}

/** What to send. */
export interface Load {
  readonly url: string;
  readonly method?: "GET" | "POST";
  readonly path: string;
  readonly body?: string;
  /** A new X-Forwarded-For per request: IPv4 or IPv6 (all in one /64), or none. */
  readonly addresses?: "none" | "v4" | "v6";
  /** First IPv4 octet or IPv6 group, so cases never reuse an address. */
  readonly prefix?: number;
  readonly connections: number;
  readonly seconds: number;
  /** Stop after this many requests (0: run for `seconds`). */
  readonly limit?: number;
}

async function run(command: string, args: string[]): Promise<boolean> {
  try {
    const { success } = await new Deno.Command(command, { args, stdin: "null" }).output();
    return success;
  } catch {
    return false;
  }
}

/** Installs wrk with apt-get (as root) unless it is on PATH. */
export async function ensureWrk(): Promise<void> {
  if (await run("sh", ["-c", "command -v wrk"])) return;
  console.error("installing wrk (apt-get install -y wrk) ...");
  if (!await run("apt-get", ["install", "-y", "wrk"])) {
    await run("apt-get", ["update"]);
    if (!await run("apt-get", ["install", "-y", "wrk"])) {
      throw new Error("wrk is missing and apt-get install -y wrk failed; install it and retry");
    }
  }
}

/** Runs wrk with one thread and `connections` connections; returns its figures. */
export async function runWrk(load: Load): Promise<WrkResult> {
  const child = new Deno.Command("wrk", {
    args: [
      "-t1",
      `-c${load.connections}`,
      `-d${load.seconds}s`,
      "--timeout=10s",
      "-s",
      SCRIPT,
      `${load.url}${load.path}`,
    ],
    env: {
      BENCH_METHOD: load.method ?? "GET",
      BENCH_PATH: load.path,
      BENCH_BODY: load.body ?? "",
      BENCH_ADDR: load.addresses ?? "none",
      BENCH_PREFIX: String(load.prefix ?? 10),
      BENCH_LIMIT: String(load.limit ?? 0),
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = (async () => {
    let text = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      // wrk ends early (and still reports) on SIGINT.
      if (!text.includes("limit reached") && (text += chunk).includes("limit reached")) {
        child.kill("SIGINT");
      }
    }
    return text;
  })();
  const stdout = new Response(child.stdout).text();
  const [status, out, err] = await Promise.all([child.status, stdout, stderr]);
  const line = out.split("\n").find((l) => l.startsWith('{"requests"'));
  if (line === undefined) throw new Error(`wrk failed (${status.code}): ${out}${err}`);
  return JSON.parse(line);
}
