/**
 * `deno task start`: reads `.env` and the environment (environment wins), validates them, and
 * runs `main.ts` in a child Deno with permissions no wider than this configuration needs.
 *
 * @module
 */
import { parseEnv } from "node:util";
import { ConfigError, parseConfig } from "./config.ts";
import { serviceFlags } from "./permissions.ts";
import { mergeSettings, readSettings } from "./settings.ts";

async function readDotEnv(path: string): Promise<Record<string, string | undefined>> {
  try {
    return parseEnv(await Deno.readTextFile(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw error;
  }
}

async function launch(): Promise<number> {
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
  // "deno" from PATH, matching the task's --allow-run=deno (npx puts its deno on PATH too).
  const child = new Deno.Command("deno", {
    args: ["run", ...flags, main],
    env: settings,
    stdin: "null",
  }).spawn();
  // The child stops gracefully on its own signal; the launcher only passes signals on.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => child.kill(signal));
  }
  return (await child.status).code;
}

if (import.meta.main) Deno.exit(await launch());
