/**
 * `deno task contactd [command]` (and `deno task start`, its `serve`): reads `.env` (telling
 * about lines it skips and a mode others may read) and the environment (environment wins),
 * validates them, and runs `main.ts` with the given arguments in
 * a child Deno (the one running this) with permissions no wider than this configuration needs.
 * The child's life is tied to the launcher's: signals are passed on, and the child stops when
 * the launcher's end of its stdin pipe closes (the launcher killed by SIGKILL included).
 * `serve` reports in JSON log lines, every other command in plain `contactd <command>: ...`
 * lines.
 *
 * @module
 */
import { ConfigError, parseConfig } from "../lib/config/config.ts";
import { type LogFields, settingsLogger } from "../lib/log/logger.ts";
import {
  blockedFlags,
  exportFlags,
  forgetFlags,
  pendingFlags,
  permissionLine,
  serviceFlags,
} from "../lib/config/permissions.ts";
import {
  type EnvFile,
  type EnvFileNote,
  envFileNotes,
  formSettingWarnings,
  mergeSettings,
  parseEnvFile,
  readSettings,
  type Settings,
} from "../lib/config/settings.ts";
import { serviceSignals } from "../lib/service/signals.ts";
import { type Invocation, LAUNCHED_BY_TASK_FLAG, parseCommandLine } from "../lib/cli/cli.ts";

const encoder = new TextEncoder();

/** The env file of a checkout, in the directory deno task runs in (where deno.json is). */
export const DOT_ENV = ".env";

/**
 * The settings in the env file at `path` (none when it does not exist) with what to tell about
 * it, or one line saying why it cannot be read: a stack trace would tell an operator less. Its
 * `FORM_` lines are told once `FORMS` is known ({@linkcode formSettingWarnings} with `file`).
 */
export async function readDotEnv(
  path: string,
): Promise<
  { values: Record<string, string | undefined>; notes: EnvFileNote[]; file?: EnvFile } | string
> {
  let text: string;
  let mode: number | null;
  try {
    text = await Deno.readTextFile(path);
    mode = (await Deno.stat(path)).mode;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { values: {}, notes: [] };
    if (error instanceof Deno.errors.PermissionDenied) {
      return `cannot read ${path}: the system refused access (permission denied); ` +
        "make it readable by the user running deno task (chmod 600, owned by that user)";
    }
    const reason = error instanceof Error
      ? `${error.name}: ${error.message.split("\n")[0]!.slice(0, 200)}`
      : String(error);
    return permissionLine(error)?.replace(/^contactd: /, "") ?? `cannot read ${path}: ${reason}`;
  }
  const file = parseEnvFile(text);
  return { values: file.values, notes: envFileNotes(path, file, mode), file };
}

/** The invocation, or `undefined` when the child is to say what is wrong with it. */
function _invocationOf(args: readonly string[]): Invocation | undefined {
  try {
    return parseCommandLine(args);
  } catch {
    return undefined;
  }
}

/**
 * How the launcher speaks: `serve` writes the service's JSON log lines; the other commands (and
 * help) plain `contactd <command>: ...` lines for a person at a terminal.
 */
function _reporter(invocation: Invocation | undefined, settings: Settings) {
  const command = invocation?.kind === "run" ? invocation.command : undefined;
  const log = settingsLogger(settings, (line) => Deno.stderr.writeSync(encoder.encode(line)));
  const plain = (text: string) =>
    Deno.stderr.writeSync(encoder.encode(`contactd${command ? ` ${command}` : ""}: ${text}\n`));
  return {
    /** Something to fix (exit 1 follows). */
    error(text: string, fields: LogFields) {
      if (command === "serve") log("error", fields);
      else plain(text);
    },
    /** Something to know. */
    warn(note: EnvFileNote) {
      if (command === "serve") log("warn", note.fields);
      else plain(note.text);
    },
  };
}

async function launch(args: readonly string[]): Promise<number> {
  const invocation = _invocationOf(args);
  const early = _reporter(invocation, {});
  if (invocation?.kind === "run" && invocation.envFile !== undefined) {
    // The launcher may read .env only (deno.json), and through npx Node takes --env-file for
    // itself before contactd sees it: in a checkout, .env is the one file.
    early.error(
      `--env-file is the option of a compiled contactd; deno task contactd reads ${DOT_ENV} ` +
        `in the checkout: put the settings there, or set them in the environment`,
      { event: "usage", error: "--env-file is for a compiled contactd" },
    );
    return 2;
  }
  const dotEnv = await readDotEnv(DOT_ENV);
  if (typeof dotEnv === "string") {
    early.error(dotEnv, { event: "env_file_unreadable", file: DOT_ENV, error: dotEnv });
    return 1;
  }
  const fromProcess = readSettings((name) => Deno.env.get(name), dotEnv.values.FORMS);
  const settings = mergeSettings(dotEnv.values, fromProcess);
  // The same redaction as the service's own log lines.
  const report = _reporter(invocation, settings);
  // A FORM_<X>_<SETTING> line no form of the FORMS in effect reads (FORM_SITEB_CHAT_ID for
  // site-b) is told like the other skipped lines; the child tells about the environment's.
  const formLines = dotEnv.file === undefined
    ? []
    : envFileNotes(DOT_ENV, { warnings: formSettingWarnings(dotEnv.file, settings.FORMS) }, null);
  for (const note of [...dotEnv.notes, ...formLines]) report.warn(note);

  let flags: string[];
  const command = invocation?.kind === "run" ? invocation.command : undefined;
  try {
    const config = parseConfig(settings);
    // export only reads the backup file, forget only touches contactd's own files, pending
    // only reads the database, blocked and unblock only use it.
    flags = command === "export"
      ? exportFlags(config, invocation?.kind === "run" ? invocation.export?.filesDir : undefined)
      : command === "forget"
      ? forgetFlags(config)
      : command === "pending"
      ? pendingFlags(config)
      : command === "blocked" || command === "unblock"
      ? blockedFlags(config)
      : serviceFlags(config);
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof RangeError)) throw error;
    if (invocation === undefined || invocation.kind !== "run") {
      // Help, version or a usage error need no settings: the child runs with no permission.
      flags = ["--no-prompt"];
    } else {
      report.error(error.message, {
        event: "config_invalid",
        ...(error instanceof ConfigError ? { setting: error.setting } : {}),
        error: error.message,
      });
      return 1;
    }
  }

  const main = new URL("../main.ts", import.meta.url).href;
  // The Deno running this launcher, the one binary the task's --allow-run names. A serving
  // child's stdin is a pipe this process holds open and never writes: its end tells the child to
  // stop. Every other command has the task's own standard input (forget --contact -, unblock -).
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, main, "--stop-on-stdin-eof", LAUNCHED_BY_TASK_FLAG, ...args],
    // mergeSettings keeps only the values that are set.
    env: settings as Record<string, string>,
    stdin: command === "serve" ? "piped" : "inherit",
  }).spawn();
  // The signals the child stops gracefully on are passed on (Windows knows only two).
  for (const signal of serviceSignals(Deno.build.os).stop) {
    Deno.addSignalListener(signal, () => {
      try {
        child.kill(signal);
      } catch {
        // Already gone.
      }
    });
  }
  return (await child.status).code;
}

if (import.meta.main) Deno.exit(await launch(Deno.args));
