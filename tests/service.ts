/**
 * Test harness: runs the real service as a child process with exactly the permission flags
 * `deno task start` derives (lib/permissions.ts), in a temporary working directory.
 *
 * @module
 */
import { parseConfig } from "../lib/config.ts";
import { serviceFlags } from "../lib/permissions.ts";

/** A running service process. */
export interface Service {
  readonly url: string;
  readonly dir: string;
  /** Absolute path of the backup file. */
  readonly file: string;
  readonly stdout: string[];
  readonly stderr: string[];
  readonly process: Deno.ChildProcess;
  /** Parsed backup records. */
  records(): Promise<Array<Record<string, unknown>>>;
  /** POSTs a JSON body to /api/contact from a forwarded client address. */
  post(body: unknown, ip?: string, headers?: Record<string, string>): Promise<Response>;
  /** Sends a signal (default SIGTERM) and waits for the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
  /** Every log line, parsed; throws if a line is not JSON. */
  logs(): Array<Record<string, unknown>>;
}

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** Finds a free loopback port (closed again before the service binds it). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** The environment a child Deno needs to find its cache, and nothing of ours. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["HOME", "DENO_DIR", "PATH"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

function collect(stream: ReadableStream<Uint8Array>, into: string[], onLine: () => void) {
  (async () => {
    let buffer = "";
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      buffer += text;
      let index;
      while ((index = buffer.indexOf("\n")) >= 0) {
        into.push(buffer.slice(0, index));
        buffer = buffer.slice(index + 1);
        onLine();
      }
    }
    if (buffer !== "") into.push(buffer);
    onLine();
  })();
}

/**
 * The command line and environment of the real service for `settings`, with exactly the
 * permission flags `deno task start` derives (also used by the benchmark).
 */
export function serviceCommand(
  settings: Record<string, string>,
): { args: string[]; env: Record<string, string> } {
  const flags = serviceFlags(parseConfig(settings));
  return { args: ["run", ...flags, MAIN], env: { ...baseEnv(), ...settings } };
}

/** Starts main.ts with `settings` (PORT and MESSAGES_FILE default to a free port and a temp file). */
export async function startService(settings: Record<string, string> = {}): Promise<Service> {
  const dir = await Deno.makeTempDir({ prefix: "contactd-test-" });
  const env = { PORT: String(freePort()), MESSAGES_FILE: `${dir}/messages.jsonl`, ...settings };
  const process = new Deno.Command(Deno.execPath(), {
    ...serviceCommand(env),
    cwd: dir,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout: string[] = [];
  const stderr: string[] = [];
  let wake = () => {};
  collect(process.stdout, stdout, () => wake());
  collect(process.stderr, stderr, () => wake());
  let exited = false;
  process.status.then(() => {
    exited = true;
    wake();
  });
  const url = `http://127.0.0.1:${env.PORT}`;
  const file = env.MESSAGES_FILE.startsWith("/")
    ? env.MESSAGES_FILE
    : `${dir}/${env.MESSAGES_FILE}`;

  const service: Service = {
    url,
    dir,
    file,
    stdout,
    stderr,
    process,
    async records() {
      const text = await Deno.readTextFile(file).catch(() => "");
      return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
    },
    post(body, ip = "198.51.100.1", headers = {}) {
      return fetch(`${url}/api/contact`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-real-ip": ip, ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    },
    async stop(signal = "SIGTERM") {
      if (!exited) process.kill(signal);
      const { code } = await process.status;
      return code;
    },
    logs() {
      return [...stdout, ...stderr].filter((line) => line !== "").map((line) => JSON.parse(line));
    },
  };

  // Wait for the "listening" line, or fail with what the service said.
  const deadline = Date.now() + 30_000;
  while (!stdout.some((line) => line.includes('"event":"listening"'))) {
    if (exited || Date.now() > deadline) {
      throw new Error(`service did not start:\n${stderr.join("\n")}\n${stdout.join("\n")}`);
    }
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, 100);
    });
  }
  return service;
}

/** Runs main.ts to completion with settings that should stop start-up. */
export async function runToExit(settings: Record<string, string>, cwd?: string) {
  const dir = cwd ?? await Deno.makeTempDir({ prefix: "contactd-test-" });
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-net",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      MAIN,
    ],
    cwd: dir,
    clearEnv: true,
    env: { ...baseEnv(), ...settings },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}
