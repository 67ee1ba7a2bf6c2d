/**
 * `deno task` run hermetically: in a copy of the checkout's sources (never the developer's
 * `.env`, `dist/` or state files), with a cleared environment. Every test that runs a real
 * `deno task` goes through here, so the developer's settings cannot change what it sees.
 *
 * @module
 */
import { baseEnv } from "./service.ts";
import { copyTree, ROOT } from "./sources.ts";

/** What `deno task` needs of a checkout: its configuration, the entry point, the scripts. */
const SOURCES = ["deno.json", "deno.lock", "main.ts"];

/**
 * Copies the sources of the checkout at `from` (default: this one) into a new temporary
 * directory and returns its path (no trailing `/`): `deno.json`, `deno.lock`, `main.ts`,
 * `tasks/`, `lib/` and `examples/`; nothing else, so no `.env` of `from` comes along.
 */
export async function sourceCheckout(from: string = ROOT): Promise<string> {
  const root = from.endsWith("/") ? from : `${from}/`;
  const dir = await Deno.makeTempDir({ prefix: "contactd-checkout-" });
  for (const name of SOURCES) await Deno.copyFile(`${root}${name}`, `${dir}/${name}`);
  for (const folder of ["tasks", "lib", "examples"]) {
    await copyTree(`${root}${folder}`, `${dir}/${folder}`);
  }
  return dir;
}

let shared: Promise<string> | undefined;

/** One {@linkcode sourceCheckout} of this checkout for the whole test file, removed at exit. */
export function sharedCheckout(): Promise<string> {
  if (shared === undefined) {
    shared = sourceCheckout();
    shared.then((dir) =>
      globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }))
    );
  }
  return shared;
}

/** What a finished `deno task` said. */
export interface TaskOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `deno task <args>` (e.g. `["--quiet", "compile", "--print"]`) in `checkout` (default:
 * {@linkcode sharedCheckout}) with only `env` on top of {@linkcode baseEnv}; `stdin` is written
 * to its standard input and closed (none: no standard input). A task killed for `timeoutMs`
 * is killed with every process under it (the launcher, main.ts) and ends with code 137.
 */
export async function runTask(
  args: readonly string[],
  options: {
    checkout?: string;
    env?: Record<string, string>;
    stdin?: string;
    /** Ends the task (SIGKILL) when it has not finished in this many ms. */
    timeoutMs?: number;
  } = {},
): Promise<TaskOutput> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", ...args],
    cwd: options.checkout ?? await sharedCheckout(),
    clearEnv: true,
    env: { ...baseEnv(), ...options.env },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const timer = options.timeoutMs === undefined
    ? undefined
    : setTimeout(() => killTree(child.pid), options.timeoutMs);
  const output = await child.output().finally(() => clearTimeout(timer));
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** Kills `pid` and every process under it (SIGKILL), the deepest first; Linux's /proc. */
async function killTree(pid: number): Promise<void> {
  // Deno reads /proc only under --allow-all; the test task grants --allow-run, so cat.
  const output = await new Deno.Command("cat", {
    args: [`/proc/${pid}/task/${pid}/children`],
    stdout: "piped",
    stderr: "null",
  }).output();
  const children = new TextDecoder().decode(output.stdout).trim().split(/\s+/).filter(Boolean);
  for (const child of children) await killTree(Number(child));
  try {
    Deno.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}
