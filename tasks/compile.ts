/**
 * `deno task compile [--target TRIPLE] [--print]`: builds `dist/contactd` with `deno compile`,
 * its permissions baked in from {@linkcode serviceFlags} and the build's `HOST`, `PORT`,
 * `MESSENGER_API_URL`, `MESSAGES_FILE`, `CHALLENGE`, `TURNSTILE_VERIFY_URL` baked in as the
 * binary's defaults (arguments after
 * `main.ts`, `--built-default NAME=VALUE`: never `--env-file`, which would embed the secrets).
 * The build settings come from the environment and `.env` in the checkout, read as
 * `deno task start` reads it (the environment wins); what was baked in is printed.
 *
 * `--print` prints the `deno` arguments as a JSON array instead of building (the tests run the
 * service with exactly these arguments). `--target` builds for another OS or architecture, into
 * `dist/contactd-TRIPLE`.
 *
 * @module
 */
import { ConfigError, DEFAULTS, parseConfig, parseSmtpServer } from "../lib/config/config.ts";
import { BUILT_DEFAULT_FLAG } from "../lib/cli/cli.ts";
import { BUILD_SETTINGS, serviceFlags } from "../lib/config/permissions.ts";
import { DOT_ENV, readDotEnv } from "./launch.ts";

/** Names the one env file the binary may read (`contactd --env-file`). */
const ENV_FILE_SETTING = "CONTACTD_ENV_FILE";

/** Where the systemd unit and the README keep the settings. */
export const DEFAULT_ENV_FILE = "/etc/contactd/env";

/** The binary, relative to the repository, for the host's own OS and architecture. */
export const OUTPUT = "dist/contactd";

/** The targets `deno compile --target` supports. */
export const TARGETS = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
  "x86_64-pc-windows-msvc",
] as const;

/** One of {@linkcode TARGETS}. */
export type Target = typeof TARGETS[number];

/** What the task's own command line asked for. */
export interface CompileOptions {
  readonly print: boolean;
  readonly target?: Target;
}

/** The task's command line: `--print`, `--target TRIPLE` (or `=TRIPLE`); anything else throws. */
export function parseCompileArgs(args: readonly string[]): CompileOptions {
  let print = false;
  let target: Target | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--print") {
      print = true;
    } else if (arg === "--target" || arg.startsWith("--target=")) {
      const value = arg === "--target" ? args[++i] : arg.slice("--target=".length);
      if (value === undefined || !(TARGETS as readonly string[]).includes(value)) {
        throw new RangeError(`--target must be one of ${TARGETS.join(", ")}`);
      }
      target = value as Target;
    } else {
      throw new RangeError(
        `unknown argument "${arg.slice(0, 40)}" (accepted: --target TRIPLE, --print)`,
      );
    }
  }
  return { print, ...(target === undefined ? {} : { target }) };
}

/**
 * The arguments of `deno` that build the binary for `buildEnv`. `MESSAGES_FILE` stays relative
 * (default `messages.jsonl`): Deno keeps relative paths of a compiled binary unresolved and
 * resolves them against the working directory at run time, which the systemd unit sets to its
 * StateDirectory. Throws {@linkcode ConfigError} or `RangeError` for a malformed value.
 */
export function compileArgs(
  buildEnv: Readonly<Record<string, string | undefined>>,
  options: Omit<CompileOptions, "print"> = {},
): string[] {
  const settings = Object.fromEntries(BUILD_SETTINGS.map((name) => [name, buildEnv[name]]));
  const envFile = buildEnv[ENV_FILE_SETTING]?.trim() || DEFAULT_ENV_FILE;
  if (!envFile.startsWith("/")) {
    // Relative would resolve against the service's working directory, not the operator's.
    throw new RangeError(`"${ENV_FILE_SETTING}" must be an absolute path`);
  }
  // The secrets (CHALLENGE_SECRET) come at run time, from the env file. So does SMTP_URL (it may
  // hold the password): the build reads only its server, for --allow-net.
  const smtpUrl = buildEnv.SMTP_URL?.trim();
  const mail = smtpUrl ? parseSmtpServer(smtpUrl) : undefined;
  const flags = serviceFlags({
    ...parseConfig(settings, { requireSecrets: false }),
    ...(mail === undefined ? {} : { mail: { host: mail.host, port: mail.port } }),
  }, { envFile });
  // Arguments after the script are baked into the binary and come before the operator's.
  const builtDefaults = BUILD_SETTINGS.flatMap((name) => {
    const value = buildEnv[name]?.trim();
    return value ? [BUILT_DEFAULT_FLAG, `${name}=${value}`] : [];
  });
  return [
    "compile",
    ...flags,
    ...(options.target === undefined ? [] : ["--target", options.target]),
    "--output",
    options.target === undefined ? OUTPUT : `${OUTPUT}-${options.target}`,
    "main.ts",
    ...builtDefaults,
  ];
}

/** Deno's words when it cannot fetch the base binary (denort) of the target. */
const BASE_BINARY_FAILED = /Setting up base binary|denort|dl\.deno\.land/i;

/** One line for a failed `deno compile`, when its cause is known; else `undefined`. */
export function compileFailure(stderr: string, denortBin: string | undefined): string | undefined {
  if (!BASE_BINARY_FAILED.test(stderr) || denortBin !== undefined) return undefined;
  if (!/error sending request|dns error|connect|timed out|download/i.test(stderr)) return undefined;
  return `compile: this host is offline (the denort base binary of Deno ${Deno.version.deno} ` +
    `cannot be downloaded); run DENORT_BIN=/path/to/denort deno task compile with a denort of ` +
    `the same version (docs/deployment.md, "Offline build hosts")`;
}

/**
 * The line saying what a build bakes in: each build setting as the binary will default to it
 * (the build's value, else contactd's default) and the env file it may read. None is a secret.
 */
export function bakedInLine(buildEnv: Readonly<Record<string, string | undefined>>): string {
  const defaults: Readonly<Record<string, string>> = DEFAULTS;
  const values = BUILD_SETTINGS.map((name) =>
    `${name}=${buildEnv[name]?.trim() || defaults[name]}`
  );
  const envFile = buildEnv[ENV_FILE_SETTING]?.trim() || DEFAULT_ENV_FILE;
  return `compile: baked in: ${values.join(" ")}; settings file --env-file ${envFile}`;
}

/** The reminder the systemd unit needs when the port is not the default. */
export function socketBindNote(port: string | undefined): string | undefined {
  const value = port?.trim();
  if (!value || value === DEFAULTS.PORT) return undefined;
  return `compile: PORT=${value}: set SocketBindAllow=tcp:${value} in systemd/contactd.service too`;
}

async function compile(args: readonly string[]): Promise<number> {
  const dotEnv = await readDotEnv(DOT_ENV);
  if (typeof dotEnv === "string") {
    console.error(`compile: ${dotEnv}`);
    return 1;
  }
  for (const note of dotEnv.notes) console.error(`compile: ${note.text}`);
  // As deno task start reads them: the environment wins over .env; an empty value is unset.
  // SMTP_URL only for its server's --allow-net entry (compileArgs): it is never baked in.
  const buildEnv = Object.fromEntries(
    [...BUILD_SETTINGS, ENV_FILE_SETTING, "SMTP_URL"].map((name) => [
      name,
      Deno.env.get(name) ?? dotEnv.values[name],
    ]),
  );
  let denoArgs: string[];
  let options: CompileOptions;
  try {
    options = parseCompileArgs(args);
    denoArgs = compileArgs(buildEnv, options);
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof RangeError)) throw error;
    console.error(`compile: ${error.message}`);
    return 1;
  }
  console.error(bakedInLine(buildEnv));
  const note = socketBindNote(buildEnv.PORT);
  if (note !== undefined) console.error(note);
  if (options.print) {
    console.log(JSON.stringify(denoArgs));
    return 0;
  }
  console.error(`compile: deno ${denoArgs.join(" ")}`);
  const hadDist = await exists("dist");
  // The Deno running this task, the one binary the task's --allow-run names. It inherits
  // DENORT_BIN, which offline build hosts set to a denort binary of the same version.
  const output = await new Deno.Command(Deno.execPath(), {
    args: denoArgs,
    stdin: "null",
    stdout: "inherit",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  if (output.success) {
    await Deno.stderr.write(output.stderr);
    return 0;
  }
  // deno compile creates dist/ before it fails: leave no empty one behind.
  if (!hadDist) await Deno.remove("dist").catch(() => {});
  const line = compileFailure(stderr, Deno.env.get("DENORT_BIN"));
  if (line !== undefined) console.error(line);
  else await Deno.stderr.write(output.stderr);
  return output.code || 1;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

if (import.meta.main) Deno.exit(await compile(Deno.args));
