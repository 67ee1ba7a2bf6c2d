/**
 * The Deno permissions of the service, derived from its configuration: the one source of truth
 * for `deno task start`, the end-to-end tests and the compiled binary.
 *
 * @module
 */
import { type Config, SETTING_NAMES } from "./config.ts";
import { examplePagePath } from "./example_page.ts";

/** The parts of the configuration that decide what the service may touch. */
export type PermissionInputs = Pick<
  Config,
  "host" | "port" | "apiUrl" | "messagesFile" | "serveExample"
>;

/** `host:port` as Deno's `--allow-net` expects it (IPv6 in brackets). */
export function netAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The flags of `deno run`/`deno compile`: listen on one address, call one API host, read and
 * write one file (and read the example page with `SERVE_EXAMPLE=1`), read only the named
 * settings. Nothing else (no run, ffi, sys, import).
 */
export function serviceFlags(config: PermissionInputs): string[] {
  const api = new URL(config.apiUrl);
  const apiPort = api.port === "" ? (api.protocol === "https:" ? 443 : 80) : Number(api.port);
  return [
    "--no-prompt",
    `--allow-net=${netAddress(config.host, config.port)},${netAddress(api.hostname, apiPort)}`,
    // Read: fstat of the open file (mode check) and noticing a rotated file; the example page
    // (read once at start-up) only when it is served.
    `--allow-read=${
      config.serveExample ? `${config.messagesFile},${examplePagePath()}` : config.messagesFile
    }`,
    `--allow-write=${config.messagesFile}`,
    `--allow-env=${SETTING_NAMES.join(",")}`,
  ];
}
