/**
 * `deno task contactd [command]` (and `deno task start`, its `serve`): reads `.env` and the
 * environment (environment wins), validates them, and runs `main.ts` with the given arguments in
 * a child Deno (the one running this) with permissions no wider than this configuration needs.
 * The child's life is tied to the launcher's: signals are passed on, and the child stops when
 * the launcher's end of its stdin pipe closes (the launcher killed by SIGKILL included).
 *
 * @module
 */
import { parseEnv } from "node:util";
import { ConfigError, parseConfig } from "../lib/config/config.ts";
import { settingsLogger } from "../lib/log/logger.ts";
import { permissionLine, serviceFlags } from "../lib/config/permissions.ts";
import { mergeSettings, readSettings } from "../lib/config/settings.ts";
import { serviceSignals } from "../lib/service/signals.ts";

const encoder = new TextEncoder();

/**
 * The settings in the env file at `path` (none when it does not exist), or one line saying why
 * it cannot be read: a stack trace would tell an operator less.
 */
async function readDotEnv(path: string): Promise<Record<string, string | undefined> | string> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    if (error instanceof Deno.errors.PermissionDenied) {
      return `contactd: cannot read ${path}: the system refused access (permission denied); ` +
        "make it readable by the user running deno task (chmod 600, owned by that user)";
    }
    const reason = error instanceof Error
      ? `${error.name}: ${error.message.split("\n")[0]!.slice(0, 200)}`
      : String(error);
    return permissionLine(error) ?? `contactd: cannot read ${path}: ${reason}`;
  }
  return parseEnv(text);
}

async function launch(args: readonly string[]): Promise<number> {
  const fromProcess = readSettings((name) => Deno.env.get(name));
  const dotEnv = await readDotEnv(".env");
  if (typeof dotEnv === "string") {
    Deno.stderr.writeSync(encoder.encode(`${dotEnv}\n`));
    return 1;
  }
  const settings = mergeSettings(dotEnv, fromProcess);
  // The same redaction as the service's own log lines.
  const log = settingsLogger(settings, (line) => Deno.stderr.writeSync(encoder.encode(line)));

  let flags: string[];
  try {
    flags = serviceFlags(parseConfig(settings));
  } catch (error) {
    if (error instanceof ConfigError) {
      log("error", { event: "config_invalid", setting: error.setting, error: error.message });
      return 1;
    }
    if (!(error instanceof RangeError)) throw error;
    log("error", { event: "config_invalid", error: error.message });
    return 1;
  }

  const main = new URL("../main.ts", import.meta.url).href;
  // The Deno running this launcher, the one binary the task's --allow-run names. The child's
  // stdin is a pipe this process holds open and never writes: its end tells the child to stop.
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, main, "--stop-on-stdin-eof", ...args],
    env: settings,
    stdin: "piped",
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
