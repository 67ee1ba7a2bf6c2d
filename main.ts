/**
 * contactd: wiring only. Reads the configuration, builds the real dependencies, serves, and
 * stops gracefully on SIGTERM/SIGINT. Every rule lives in `lib/`.
 *
 * @module
 */
import { type Appender, openBackupFile } from "./lib/backup.ts";
import { ConfigError, parseConfig, SETTING_NAMES } from "./lib/config.ts";
import { EXAMPLE_PAGE_URL } from "./lib/example_page.ts";
import { createHandler } from "./lib/handler.ts";
import { createLogger, describeError, type Logger } from "./lib/log.ts";
import { RateLimiter } from "./lib/rate_limit.ts";
import { sendNotification } from "./lib/telegram.ts";

const encoder = new TextEncoder();

function readSettings(): Record<string, string | undefined> {
  return Object.fromEntries(SETTING_NAMES.map((name) => [name, Deno.env.get(name)]));
}

async function main(): Promise<number> {
  const settings = readSettings();
  const token = settings.MESSENGER_BOT_TOKEN?.trim();
  const log: Logger = createLogger(
    (line, level) => (level === "info" ? Deno.stdout : Deno.stderr).writeSync(encoder.encode(line)),
    () => new Date(),
    token ? [token] : [],
  );

  let config;
  try {
    config = parseConfig(settings);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    log("error", { event: "config_invalid", setting: error.setting, error: error.message });
    return 1;
  }
  if (config.messenger === undefined) {
    log("warn", {
      event: "not_configured",
      hint: "set MESSENGER_BOT_TOKEN and MESSENGER_CHAT_ID; submissions are stored, not delivered",
    });
  }

  let backup: Appender;
  try {
    backup = await openBackupFile(config.messagesFile, (mode) =>
      log("warn", {
        event: "backup_file_mode",
        mode: mode.toString(8),
        hint: "chmod 600 the backup file: it holds personal data",
      }));
  } catch (error) {
    log("error", {
      event: "backup_open_failed",
      file: config.messagesFile,
      error: describeError(error),
    });
    return 1;
  }

  let examplePage: Uint8Array | undefined;
  if (config.serveExample) {
    try {
      // Read once: the handler serves these bytes and never touches the file system.
      examplePage = await Deno.readFile(EXAMPLE_PAGE_URL);
    } catch (error) {
      log("error", { event: "example_read_failed", error: describeError(error) });
      await backup.close();
      return 1;
    }
    log("info", { event: "serving_example", path: "/" });
  }

  const { messenger } = config;
  const handler = createHandler({
    now: () => new Date(),
    trustedProxies: config.trustedProxies,
    limiter: new RateLimiter({ limit: 5, windowMs: 60_000, maxEntries: 1_000_000 }),
    deliver: messenger === undefined ? undefined : (text) =>
      sendNotification({
        apiUrl: config.apiUrl,
        token: messenger.token,
        chatId: messenger.chatId,
        timeoutMs: config.timeoutMs,
        fetch,
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      }, text),
    append: (line) => backup.append(line),
    log,
    allowedOrigins: config.allowedOrigins,
    examplePage,
  });

  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: config.host,
      port: config.port,
      onListen: ({ hostname, port }) => log("info", { event: "listening", hostname, port }),
      onError: (error) => {
        log("error", { event: "internal_error", status: 500, error: describeError(error) });
        return new Response(null, { status: 500 });
      },
    }, handler);
  } catch (error) {
    log("error", { event: "listen_failed", error: describeError(error) });
    await backup.close();
    return 1;
  }

  const stop = (signal: Deno.Signal) => {
    log("info", { event: "stopping", signal });
    // shutdown() stops accepting and waits for in-flight requests (and their records).
    server.shutdown();
  };
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));

  await server.finished;
  await backup.close();
  log("info", { event: "stopped" });
  return 0;
}

if (import.meta.main) Deno.exit(await main());
