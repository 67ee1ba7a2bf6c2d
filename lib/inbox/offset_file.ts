/**
 * The updates offset kept between runs (`MESSAGES_FILE.updates`): the next update id to ask
 * `getUpdates` for, written after each update is handled, so a restart does not handle it again.
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
import { updatesOffsetPath } from "../common/state_files.ts";
import type { Logger } from "../log/logger.ts";
import { readAllText, replaceFile, type StorageFs } from "../storage/file_system.ts";
import type { OffsetStore } from "./poller.ts";

/**
 * The offset file beside `messagesFile`, for the bot `botId` (`getMe`; `undefined` when it could
 * not be asked). A missing file is no offset; a damaged one is logged (`updates_offset_damaged`)
 * and read as none (Telegram then sends what it has not had confirmed); one kept for another bot
 * (the token changed) is none too: that bot's update ids are not this one's.
 */
export function offsetFile(
  messagesFile: string,
  fs: StorageFs,
  log: Logger,
  botId?: number,
): OffsetStore {
  const path = updatesOffsetPath(messagesFile);
  return {
    async load() {
      let text: string;
      try {
        if ((await fs.lstat(path)).isSymlink) {
          // Never read through a link: Telegram resends what is unconfirmed.
          log("warn", { event: "updates_offset_damaged", file: path, reason: "symbolic link" });
          return undefined;
        }
        text = await readAllText(fs, path);
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return undefined;
        throw error;
      }
      const value = parseJsonText(text);
      const offset = isRecord(value) ? value.offset : undefined;
      if (typeof offset === "number" && Number.isSafeInteger(offset) && offset >= 0) {
        const bot = isRecord(value) ? value.bot : undefined;
        if (botId !== undefined && bot !== undefined && bot !== botId) {
          log("info", { event: "updates_offset_other_bot", file: path });
          return undefined;
        }
        return offset;
      }
      log("warn", { event: "updates_offset_damaged", file: path });
      return undefined;
    },
    save(offset) {
      return replaceFile(
        fs,
        path,
        `${path}.tmp`,
        `${JSON.stringify({ offset, ...(botId === undefined ? {} : { bot: botId }) })}\n`,
        log,
        "updates_offset",
      );
    },
  };
}
