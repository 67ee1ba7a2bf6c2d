/**
 * `deno task contactd [command]` (and `deno task start`, its `serve`): reads `.env` and the
 * environment (environment wins), validates them, and runs `main.ts` with the given arguments in
 * a child Deno (the one running this) with permissions no wider than this configuration needs.
 *
 * @module
 */
import { parseEnv } from "node:util";
import { ConfigError, parseConfig } from "../lib/config.ts";
import { serviceFlags } from "../lib/permissions.ts";
import { mergeSettings, readSettings } from "../lib/settings.ts";

async function readDotEnv(path: string): Promise<Record<string, string | undefined>> {
  try {
    return parseEnv(await Deno.readTextFile(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw error;
  }
}

async function launch(args: readonly string[]): Promise<number> {
  const fromProcess = readSettings((name) => Deno.env.get(name));
  const settings = mergeSettings(await readDotEnv(".env"), fromProcess);

  let flags: string[];
  try {
    flags = serviceFlags(parseConfig(settings));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const line = { time: new Date().toISOString(), level: "error", event: "config_invalid" };
    console.error(JSON.stringify({ ...line, setting: error.setting, error: error.message }));
    return 1;
  }

  const main = new URL("../main.ts", import.meta.url).href;
  // The Deno running this launcher, the one binary the task's --allow-run names.
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, main, ...args],
    env: settings,
    stdin: "null",
  }).spawn();
  // The child stops gracefully on its own signal; the launcher only passes signals on.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => child.kill(signal));
  }
  return (await child.status).code;
}

if (import.meta.main) Deno.exit(await launch(Deno.args));
