/**
 * `deno task compile`: builds `dist/contactd` with `deno compile`, its permissions baked in from
 * {@linkcode serviceFlags} for the deployment's configuration. Permissions cannot change after
 * the build, so the settings that decide them are read from the build environment (defaults
 * otherwise). Never `--env-file` here: it would embed the secrets in the binary.
 *
 * `deno task compile --print` prints the `deno` arguments as a JSON array instead of building
 * (the tests run the service with exactly these flags).
 *
 * @module
 */
import { ConfigError, parseConfig } from "../lib/config.ts";
import { serviceFlags } from "../lib/permissions.ts";

/** Settings that decide the binary's permissions, read from the build environment. */
const BUILD_SETTINGS = ["HOST", "PORT", "MESSENGER_API_URL", "MESSAGES_FILE"] as const;

/** Names the one env file the binary may read (`contactd --env-file`). */
const ENV_FILE_SETTING = "CONTACTD_ENV_FILE";

/** Where the systemd unit and the README keep the settings. */
export const DEFAULT_ENV_FILE = "/etc/contactd/env";

/** The binary, relative to the repository. */
export const OUTPUT = "dist/contactd";

/**
 * The arguments of `deno` that build the binary for `buildEnv`. `MESSAGES_FILE` stays relative
 * (default `messages.jsonl`): Deno keeps relative paths of a compiled binary unresolved and
 * resolves them against the working directory at run time, which the systemd unit sets to its
 * StateDirectory. Throws {@linkcode ConfigError} or `RangeError` for a malformed value.
 */
function compileArgs(buildEnv: Readonly<Record<string, string | undefined>>): string[] {
  const settings = Object.fromEntries(BUILD_SETTINGS.map((name) => [name, buildEnv[name]]));
  const envFile = buildEnv[ENV_FILE_SETTING]?.trim() || DEFAULT_ENV_FILE;
  if (!envFile.startsWith("/")) {
    // Relative would resolve against the service's working directory, not the operator's.
    throw new RangeError(`"${ENV_FILE_SETTING}" must be an absolute path`);
  }
  return [
    "compile",
    ...serviceFlags(parseConfig(settings), { envFile }),
    "--output",
    OUTPUT,
    "main.ts",
  ];
}

async function compile(): Promise<number> {
  const buildEnv = Object.fromEntries(
    [...BUILD_SETTINGS, ENV_FILE_SETTING].map((name) => [name, Deno.env.get(name)]),
  );
  let args: string[];
  try {
    args = compileArgs(buildEnv);
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof RangeError)) throw error;
    console.error(`compile: ${error.message}`);
    return 1;
  }
  if (Deno.args.includes("--print")) {
    console.log(JSON.stringify(args));
    return 0;
  }
  console.error(`compile: deno ${args.join(" ")}`);
  // The Deno running this task, the one binary the task's --allow-run names. It inherits
  // DENORT_BIN, which offline build hosts set to a denort binary of the same version.
  const child = new Deno.Command(Deno.execPath(), { args, stdin: "null" }).spawn();
  return (await child.status).code;
}

if (import.meta.main) Deno.exit(await compile());
