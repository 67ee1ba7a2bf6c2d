/**
 * The lines of the block list file an older release kept (`MESSAGES_FILE.blocked`, read for the
 * import by lib/spam/block_file.ts): one JSON object per line, a block made
 * (`{"op":"block",...}`) or lifted (`{"op":"lift",...}`, by the submission that made it or by
 * key), and the list they add up to, replayed in file order.
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
import { type Block, BLOCK_KINDS, type BlockKey, type BlockKind, BlockList } from "./block_list.ts";

/** One line of the file. */
export type BlockOp =
  | ({ readonly op: "block" } & Block)
  | { readonly op: "lift"; readonly submission: string; readonly at: string }
  | { readonly op: "lift"; readonly kind: BlockKind; readonly value: string; readonly at: string };

/** The line of a block made (keys in a fixed order), with its line break. */
export function blockLine(block: Block): string {
  const { kind, value, since, until, submission, by } = block;
  return JSON.stringify({
    op: "block",
    kind,
    value,
    since,
    until,
    submission,
    ...(by === undefined ? {} : { by }),
  }) + "\n";
}

/** The line lifting the blocks `submission` made, at `at`, with its line break. */
export function liftLine(submission: string, at: string): string {
  return JSON.stringify({ op: "lift", submission, at }) + "\n";
}

/** The line lifting every block of `key`, at `at`, with its line break. */
export function liftKeyLine(key: BlockKey, at: string): string {
  return JSON.stringify({ op: "lift", kind: key.kind, value: key.value, at }) + "\n";
}

const _isTime = (value: unknown): value is string =>
  typeof value === "string" && !Number.isNaN(Date.parse(value));
const _isText = (value: unknown): value is string => typeof value === "string" && value !== "";
const _isKind = (value: unknown): value is BlockKind =>
  (BLOCK_KINDS as readonly unknown[]).includes(value);

/** The operation on one line (without its line break), or `undefined` when it is not one. */
export function parseBlockLine(line: string): BlockOp | undefined {
  const value = parseJsonText(line);
  if (!isRecord(value)) return undefined;
  const { op, kind, submission, since, until, by, at } = value;
  const key = value.value;
  if (op === "block") {
    if (!_isKind(kind) || !_isText(key) || !_isText(submission)) return undefined;
    if (!_isTime(since) || !_isTime(until)) return undefined;
    if (by !== undefined && !Number.isSafeInteger(by)) return undefined;
    return {
      op,
      kind,
      value: key,
      since,
      until,
      submission,
      ...(by === undefined ? {} : { by: by as number }),
    };
  }
  if (op !== "lift" || !_isTime(at)) return undefined;
  if (_isText(submission) && kind === undefined) return { op, submission, at };
  if (_isKind(kind) && _isText(key) && submission === undefined) {
    return { op, kind, value: key, at };
  }
  return undefined;
}

/** Applies one operation to `list`; returns the blocks a lift removed (none for a block). */
export function applyOp(list: BlockList, op: BlockOp): Block[] {
  if (op.op === "block") {
    const { op: _, ...block } = op;
    list.add(block);
    return [];
  }
  return "submission" in op ? list.lift(op.submission) : list.liftKey(op);
}

/**
 * Replays `lines` onto `list` in order; returns the numbers (1-based) of the lines that are not
 * an operation, skipped (empty lines are passed over).
 */
export function replay(list: BlockList, lines: readonly string[]): number[] {
  const damaged: number[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === "") return; // an empty line is no damage
    const op = parseBlockLine(line);
    if (op === undefined) return void damaged.push(index + 1);
    applyOp(list, op);
  });
  return damaged;
}
