/**
 * Where settings come from: the process environment and, optionally, an env file
 * (`.env` for `deno task start`, `--env-file PATH` for the binary). The environment wins.
 *
 * @module
 */
import { SETTING_NAMES, type SettingName } from "./config.ts";

/** Raw setting values by name; absent when unset. */
export type Settings = Partial<Record<SettingName, string>>;

/** Merges settings: a value in the process environment wins over the same key in the file. */
export function mergeSettings(
  fromFile: Readonly<Record<string, string | undefined>>,
  fromProcess: Readonly<Record<string, string | undefined>>,
): Settings {
  const merged: Settings = {};
  for (const name of SETTING_NAMES) {
    const value = fromProcess[name] ?? (Object.hasOwn(fromFile, name) ? fromFile[name] : undefined);
    if (value !== undefined) merged[name] = value;
  }
  return merged;
}

/** Reads the named settings, and only those (the service may read no other variable). */
export function readSettings(get: (name: SettingName) => string | undefined): Settings {
  const settings: Settings = {};
  for (const name of SETTING_NAMES) {
    const value = get(name);
    if (value !== undefined) settings[name] = value;
  }
  return settings;
}
