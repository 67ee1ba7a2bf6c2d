/**
 * Benchmark processes: contactd (with the real permission flags) and the floor, each in its own
 * temporary directory, logs to a file, started and timed until their first health answer.
 *
 * @module
 */
import { freePort, serviceCommand } from "../tests/support/service.ts";

const FLOOR = new URL("./floor.ts", import.meta.url).pathname;

/** A running server under test. */
export interface Server {
  readonly url: string;
  readonly pid: number;
  /** Its backup file. */
  readonly file: string;
  /** Milliseconds from spawn to the first 200 from /api/health. */
  readonly startupMs: number;
  /** Peak and current resident memory in MiB, from /proc/<pid>/status. */
  memory(): Promise<{ peak: number; current: number }>;
  /** SIGTERM, wait, remove the directory. */
  stop(): Promise<void>;
}

/** The bot token the benchmark's contactd uses (the fakes accept it). */
export const BENCH_TOKEN = "123456:bench-token";

/** Starts contactd against the Bot API at `apiUrl`, chat 1, with `settings` on top. */
export function startContactd(
  apiUrl: string,
  settings: Record<string, string> = {},
  options: ContactdOptions = {},
): Promise<Server> {
  return start("contactd", (port, file) => {
    const all = {
      PORT: String(port),
      MESSAGES_FILE: file,
      MESSENGER_BOT_TOKEN: BENCH_TOKEN,
      MESSENGER_CHAT_ID: "1",
      MESSENGER_API_URL: apiUrl,
      ...settings,
    };
    const command = (options.serviceCommand ?? serviceCommand)(all);
    const delay = options.commitDelayMs;
    if (delay === undefined) return command;
    return {
      args: command.args.map((arg) =>
        arg.startsWith("--allow-env=") ? `${arg},${COMMIT_DELAY}` : arg
      ),
      env: { ...command.env, [COMMIT_DELAY]: String(delay) },
    };
  });
}

/** main.ts's slow-disk hook: every database commit takes this many milliseconds longer. */
const COMMIT_DELAY = "CONTACTD_TEST_COMMIT_DELAY_MS";

/** Options of {@linkcode startContactd}. */
export interface ContactdOptions {
  /**
   * Delays every database commit by this much (main.ts reads `CONTACTD_TEST_COMMIT_DELAY_MS`
   * only when granted it: the service's flags get `--allow-env` for that name added).
   */
  readonly commitDelayMs?: number;
  /** Another checkout's tests/support/service.ts `serviceCommand` (its own main.ts and flags). */
  readonly serviceCommand?: typeof serviceCommand;
}

/**
 * Extracts commit `rev` of the repository holding this file into a new temporary directory
 * (outside the checkout; removed by `remove`) and returns its `serviceCommand`, which runs its
 * own main.ts with the flags of its own lib/config/permissions.ts.
 */
export async function checkoutCommand(
  rev: string,
): Promise<{ serviceCommand: typeof serviceCommand; dir: string; remove(): Promise<void> }> {
  const repo = new URL("..", import.meta.url).pathname;
  const dir = await Deno.makeTempDir({ prefix: "contactd-bench-landed-" });
  const { success, stderr } = await new Deno.Command("sh", {
    args: ["-c", 'git -C "$1" archive "$2" | tar -x -C "$3"', "sh", repo, rev, dir],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) throw new Error(`git archive ${rev}: ${new TextDecoder().decode(stderr)}`);
  const module = await import(`file://${dir}/tests/support/service.ts`);
  return {
    serviceCommand: module.serviceCommand,
    dir,
    remove: () => Deno.remove(dir, { recursive: true }),
  };
}

/**
 * Starts the floor (bench/floor.ts) against the Bot API at `apiUrl`; `mode` "refusal",
 * "durable" (database commits in a worker) or "durable-main" (on the HTTP thread).
 */
export function startFloor(apiUrl: string, mode = "io"): Promise<Server> {
  const modules = ["./floor_worker.ts", "./floor_db.ts"]
    .map((name) => new URL(name, import.meta.url).pathname);
  return start("floor", (port, file) => ({
    args: [
      "run",
      "--no-prompt",
      "--allow-net=127.0.0.1",
      `--allow-read=${file},${file}.db,${modules.join(",")}`,
      `--allow-write=${file},${file}.db`,
      "--allow-env=PORT,MESSENGER_API_URL,MESSAGES_FILE,FLOOR",
      FLOOR,
    ],
    env: { PORT: String(port), MESSENGER_API_URL: apiUrl, MESSAGES_FILE: file, FLOOR: mode },
  }));
}

async function start(
  name: string,
  command: (port: number, file: string) => { args: string[]; env: Record<string, string> },
): Promise<Server> {
  const dir = await Deno.makeTempDir({ prefix: `contactd-bench-${name}-` });
  const port = freePort();
  const file = `${dir}/messages.jsonl`;
  const { args, env } = command(port, file);
  const out = await Deno.create(`${dir}/stdout.log`);
  const err = await Deno.create(`${dir}/stderr.log`);
  const began = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { NO_COLOR: "1", ...env },
    cwd: dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Logs go to a file, so the driver holds none of them in memory.
  const piped = Promise.all([child.stdout.pipeTo(out.writable), child.stderr.pipeTo(err.writable)])
    .catch(() => {});
  const url = `http://127.0.0.1:${port}`;
  let exited = false;
  child.status.then(() => (exited = true));
  while (true) {
    if (exited) {
      await piped;
      throw new Error(`${name} exited: ${await Deno.readTextFile(`${dir}/stderr.log`)}`);
    }
    const response = await fetch(`${url}/api/health`).catch(() => undefined);
    if (response?.status === 200) {
      await response.body?.cancel();
      break;
    }
    await response?.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const startupMs = performance.now() - began;
  return {
    url,
    pid: child.pid,
    file,
    startupMs,
    async memory() {
      const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
      const kib = (key: string) => Number(status.match(new RegExp(`${key}:\\s+(\\d+)`))?.[1]);
      return { peak: kib("VmHWM") / 1024, current: kib("VmRSS") / 1024 };
    },
    async stop() {
      if (!exited) child.kill("SIGTERM");
      await child.status;
      await piped;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Counts the lines of a file. */
export async function countLines(path: string): Promise<number> {
  const bytes = await Deno.readFile(path).catch(() => new Uint8Array());
  let lines = 0;
  for (const byte of bytes) if (byte === 10) lines++;
  return lines;
}
