/**
 * The backup record of a submission held for spam: the record every submission gets
 * (lib/storage/backup.ts), plus `"held":"spam"` and the block that held it
 * (`"block":"address:<key>"` or `"block":"contact:<value>"`), so the owner can review it.
 *
 * @module
 */
import { type BackupRecord, formatRecord } from "../storage/backup.ts";
import { type BlockKey, keyText } from "./block_list.ts";

/** What a held record says it was, beside the block. */
export const HELD_SPAM = "spam";

/**
 * The `messenger_error` of a held record: not sent, and why, also where only the usual columns
 * are read (`contactd export --format csv`).
 */
export const HELD_SPAM_ERROR = "held as spam";

/**
 * The record line of a submission `block` held (one line, with its line break); without a
 * block, one the learned spam filter held (`SPAM_FILTER=hold`: its `spam_score` says why).
 */
export function heldRecord(record: BackupRecord, block?: BlockKey): string {
  const line = formatRecord(record); // `{...}\n`: the keys go before the closing brace
  const by = block === undefined ? "" : `,"block":${JSON.stringify(keyText(block))}`;
  return `${line.slice(0, -2)},"held":${JSON.stringify(HELD_SPAM)}${by}}\n`;
}
