/**
 * The updates offset kept between runs: the next update id to ask `getUpdates` for, written
 * after each update is handled, so a restart does not handle it again. Kept in the database's
 * `meta` table ({@linkcode OFFSET_KEY}, the JSON `{"offset":N,"bot":ID}`); also the reader of the
 * file an older release kept (`MESSAGES_FILE.updates`), for the import.
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
import { updatesOffsetPath } from "../common/state_files.ts";
import type { Logger } from "../log/logger.ts";
import { readAllText, type StorageFs } from "../storage/file_system.ts";
import type { Store } from "../storage/store.ts";
import type { OffsetStore } from "./poller.ts";

/** The `meta` key of the offset. */
export const OFFSET_KEY = "updates_offset";

/** An offset as kept: the number, and the bot (`getMe` id) whose update ids it counts. */
export interface KeptOffset {
  readonly offset: number;
  readonly bot?: number;
}

/** The kept text of `kept` (the `meta` value; the old file's line without its line break). */
export function offsetText(kept: KeptOffset): string {
  return JSON.stringify({
    offset: kept.offset,
    ...(kept.bot === undefined ? {} : { bot: kept.bot }),
  });
}

/** `text` read as a kept offset, or `undefined` when it is not one (damaged). */
export function parseOffset(text: string): KeptOffset | undefined {
  const value = parseJsonText(text);
  if (!isRecord(value)) return undefined;
  const { offset, bot } = value;
  if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) return undefined;
  if (bot === undefined) return { offset };
  return typeof bot === "number" && Number.isSafeInteger(bot) ? { offset, bot } : undefined;
}

/**
 * The offset kept in `store`, for the bot `botId` (`getMe`; `undefined` when it could not be
 * asked). None kept is no offset; a damaged value is logged (`updates_offset_damaged`) and read
 * as none (Telegram then sends what it has not had confirmed); one kept for another bot (the
 * token changed) is none too (`updates_offset_other_bot`): that bot's update ids are not this
 * one's. A store that fails rejects, for the poller to log.
 */
export function offsetStore(store: Store, log: Logger, botId?: number): OffsetStore {
  return {
    async load() {
      const text = await store.run("meta.get", { key: OFFSET_KEY });
      if (text === undefined) return undefined;
      const kept = parseOffset(text);
      if (kept === undefined) {
        log("warn", { event: "updates_offset_damaged", key: OFFSET_KEY });
        return undefined;
      }
      if (botId !== undefined && kept.bot !== undefined && kept.bot !== botId) {
        log("info", { event: "updates_offset_other_bot", key: OFFSET_KEY });
        return undefined;
      }
      return kept.offset;
    },
    save(offset) {
      const value = offsetText({ offset, ...(botId === undefined ? {} : { bot: botId }) });
      return store.run("meta.set", { key: OFFSET_KEY, value });
    },
  };
}

/**
 * The offset file an older release kept beside `messagesFile`, read for the import: `undefined`
 * when there is none, when it is damaged (logged `updates_offset_damaged`) or a symbolic link
 * (never read through one; logged too). Other errors reject.
 */
export async function readOffsetFile(
  messagesFile: string,
  fs: StorageFs,
  log: Logger,
): Promise<KeptOffset | undefined> {
  const path = updatesOffsetPath(messagesFile);
  let text: string;
  try {
    if ((await fs.lstat(path)).isSymlink) {
      log("warn", { event: "updates_offset_damaged", file: path, reason: "symbolic link" });
      return undefined;
    }
    text = await readAllText(fs, path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  const kept = parseOffset(text);
  if (kept === undefined) log("warn", { event: "updates_offset_damaged", file: path });
  return kept;
}
