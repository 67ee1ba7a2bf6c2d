/**
 * Test harness: runs the real service as a child process with exactly the permission flags
 * `deno task start` derives (lib/config/permissions.ts), in a temporary working directory.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseConfig } from "../../lib/config/config.ts";
import { blockedFlags, pendingFlags, serviceFlags } from "../../lib/config/permissions.ts";
import { type FakeBotApi, startFakeBotApi } from "./fake_bot_api.ts";
import { copyLib } from "./sources.ts";
import { requireTool } from "./tools.ts";

/** The bot token every end-to-end test configures; it must never show up anywhere. */
export const TOKEN = "123456789:AAE_secret-token-value";
/** The chat every end-to-end test notifies. */
export const CHAT_ID = -1001234567890;

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

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
/** The user an unprivileged service runs as when the tests run as root. */
export const NOBODY = 65534;

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

/** Options of {@linkcode startService}. */
export interface StartOptions {
  /**
   * Run the service as an ordinary user, so file modes bind it (root ignores them). When the
   * tests run as root, the child is started through `setpriv` as `nobody` with a copy of the
   * sources and its own Deno cache; otherwise the tests' user is unprivileged already.
   */
  readonly unprivileged?: boolean;
}

/** True when the tests run as root (file permission faults then need an unprivileged child). */
export function isRoot(): boolean {
  if (rootCache === undefined) {
    // The owner of a new file is our effective user (no --allow-sys needed for Deno.uid()).
    const probe = Deno.makeTempFileSync({ prefix: "contactd-uid-" });
    rootCache = Deno.statSync(probe).uid === 0;
    Deno.removeSync(probe);
  }
  return rootCache;
}
let rootCache: boolean | undefined;

/** Starts main.ts with `settings` (PORT and MESSAGES_FILE default to a free port and a temp file). */
export async function startService(
  settings: Record<string, string> = {},
  options: StartOptions = {},
): Promise<Service> {
  const dir = await Deno.makeTempDir({ prefix: "contactd-test-" });
  const env = { PORT: String(freePort()), MESSAGES_FILE: `${dir}/messages.jsonl`, ...settings };
  const real = serviceCommand(env);
  const drop = options.unprivileged === true && isRoot();
  const command = drop ? await unprivilegedCommand(dir) : { cmd: Deno.execPath(), pre: [] };
  // Unprivileged, the child runs a copy of the sources with a cache of its own.
  const args = drop ? real.args.map((arg) => arg === MAIN ? `${dir}/src/main.ts` : arg) : real.args;
  const process = new Deno.Command(command.cmd, {
    args: [...command.pre, ...args],
    cwd: dir,
    clearEnv: true,
    env: { ...real.env, ...(drop ? { DENO_DIR: `${dir}/deno-cache`, HOME: dir } : {}) },
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
        headers: { "content-type": "application/json", "x-forwarded-for": ip, ...headers },
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
  // A directory made here is ours to remove; a caller's stays.
  if (cwd === undefined) await Deno.remove(dir, { recursive: true });
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/**
 * Prepares `dir` for a service running as `nobody`: a world-readable copy of main.ts, deno.json and lib/
 * (the checkout may sit under a private home), a Deno binary it may execute, and `dir` owned by
 * `nobody` so it can create its backup file and cache there.
 */
async function unprivilegedCommand(dir: string): Promise<{ cmd: string; pre: string[] }> {
  await Deno.mkdir(`${dir}/src/lib`, { recursive: true });
  await Deno.copyFile(MAIN, `${dir}/src/main.ts`);
  await Deno.copyFile(new URL("../../deno.json", import.meta.url), `${dir}/src/deno.json`);
  await Deno.copyFile(new URL("../../deno.lock", import.meta.url), `${dir}/src/deno.lock`);
  // The npm packages deno.json imports (altcha-lib), from our cache into the child's own: it may
  // not read ours, and must not need the registry.
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  const { npmCache } = JSON.parse(new TextDecoder().decode(info.stdout));
  await Deno.mkdir(`${dir}/deno-cache`);
  const copied = await new Deno.Command("cp", { args: ["-R", npmCache, `${dir}/deno-cache/npm`] })
    .output();
  assert.ok(copied.success, "copying the npm cache failed");
  await copyLib(`${dir}/src`);
  let deno = Deno.execPath();
  const setpriv = ["--reuid", String(NOBODY), "--regid", String(NOBODY), "--clear-groups", "--"];
  const tool = requireTool("setpriv");
  const probe = await new Deno.Command(tool, { args: [...setpriv, deno, "--version"] }).output();
  if (!probe.success) {
    deno = `${dir}/deno`;
    await Deno.copyFile(Deno.execPath(), deno);
  }
  await Deno.chmod(dir, 0o755);
  for (const path of [dir, `${dir}/src`, `${dir}/src/lib`]) await Deno.chown(path, NOBODY, NOBODY);
  const owned = await new Deno.Command("chown", {
    args: ["-R", `${NOBODY}:${NOBODY}`, `${dir}/deno-cache`],
  }).output();
  assert.ok(owned.success, "chown of the child's cache failed");
  return { cmd: tool, pre: [...setpriv, deno] };
}

/**
 * Runs `run` against a configured service and a fake Bot API, then checks that it stops with
 * exit code 0 and that the token is in no log line and not in the backup file.
 */
export async function withService(
  settings: Record<string, string>,
  run: (service: Service, fake: FakeBotApi) => Promise<void>,
  options: StartOptions & { readonly chatId?: number } = {},
) {
  const chatId = options.chatId ?? CHAT_ID;
  const fake = startFakeBotApi({ token: TOKEN, chatId });
  const service = await startService({
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(chatId),
    MESSENGER_API_URL: fake.url,
    ...settings,
  }, options);
  try {
    await run(service, fake);
    assert.equal(await service.stop(), 0);
    assertNoTokenLeak(service, await Deno.readTextFile(service.file).catch(() => ""));
  } finally {
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
  }
}

/**
 * Runs `run` against a fake Bot API for `chatId` with `start`, which starts a configured service
 * (the settings given on top; pass `MESSAGES_FILE` to restart on an earlier one's files). Every
 * service started is stopped and its directory removed afterwards: for kill -9 and restarts.
 */
export async function withRestarts(
  chatId: number,
  run: (
    start: (settings?: Record<string, string>) => Promise<Service>,
    fake: FakeBotApi,
  ) => Promise<void>,
) {
  const fake = startFakeBotApi({ token: TOKEN, chatId });
  const started: Service[] = [];
  const start = async (settings: Record<string, string> = {}) => {
    const service = await startService({
      MESSENGER_BOT_TOKEN: TOKEN,
      MESSENGER_CHAT_ID: String(chatId),
      MESSENGER_API_URL: fake.url,
      ...settings,
    });
    started.push(service);
    return service;
  };
  try {
    await run(start, fake);
  } finally {
    for (const service of started) await service.stop();
    await fake.close();
    for (const service of started) await Deno.remove(service.dir, { recursive: true });
  }
}

const ROOT = new URL("../..", import.meta.url).pathname;

/**
 * Runs `deno task contactd <args>` as deno task runs it (the task's words from deno.json, the
 * launcher's path made absolute) in `cwd`, with only `env` on top of {@linkcode baseEnv}.
 */
export async function runContactdTask(
  args: readonly string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  // `contactd` hands its arguments to `launch`, which runs the launcher with its flags.
  const words = (tasks.launch as string)
    .replaceAll(`"$(deno eval 'console.log(Deno.execPath())')"`, Deno.execPath())
    .split(/\s+/)
    .slice(1)
    .map((word) => word === "tasks/launch.ts" ? `${ROOT}tasks/launch.ts` : word);
  const output = await new Deno.Command(Deno.execPath(), {
    args: [...words, ...args],
    cwd,
    clearEnv: true,
    env: { ...baseEnv(), ...env },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** Asserts that the token is in none of the service's output nor in `texts`; logs are JSON. */
export function assertNoTokenLeak(service: Service, ...texts: string[]) {
  for (const text of [...service.stdout, ...service.stderr, ...texts]) {
    assert.ok(!text.includes(TOKEN) && !text.includes("AAE_secret"), `token leaked in: ${text}`);
  }
  service.logs(); // every line is JSON
}

/** Waits until `done()` holds, failing after `ms` with `what` (polls every 50 ms). */
export async function waitFor(done: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `contactd pending` run by the real main.ts against `file`'s database, with the flags
 * `deno task contactd pending` gives it (the database alone).
 */
export function runPending(file: string, ...flags: string[]) {
  return _runCommand(file, pendingFlags, ["pending", ...flags]);
}

/**
 * `contactd blocked` or `contactd unblock TARGET` (`args`) run by the real main.ts against
 * `file`'s database, with the flags `deno task contactd` gives them (the database alone).
 */
export function runBlockCommand(file: string, ...args: string[]) {
  return _runCommand(file, blockedFlags, args);
}

/** The command line `args` run by the real main.ts for `file`, with the flags `flagsOf` gives. */
async function _runCommand(
  file: string,
  flagsOf: typeof pendingFlags,
  args: readonly string[],
) {
  const settings = { MESSAGES_FILE: file };
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...flagsOf(parseConfig(settings)), MAIN, ...args],
    clearEnv: true,
    env: { ...baseEnv(), ...settings },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}
