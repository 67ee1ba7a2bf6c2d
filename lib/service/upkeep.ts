/**
 * The service's background upkeep, each on its own timer and each waited for at a stop: the
 * block list takes in what commands changed (every second), `RETENTION` runs (at start, then
 * daily), and `contactd forget` requests are served (every second). No rule lives here: each is
 * the module it calls.
 *
 * @module
 */
import type { Config } from "../config/config.ts";
import { keptReplies } from "../mail/reply_upkeep.ts";
import { keptCases } from "../cases/case_book.ts";
import type { ServiceFiles } from "./files.ts";
import { describeError, type Logger } from "../log/logger.ts";
import type { ChatDeletion } from "../storage/ledger.ts";
import { type ForgottenIds, type KeptFile } from "../storage/erasure.ts";
import { FORGET_POLL_MS, serveForgetRequest } from "../storage/forget_request.ts";
import { applyRetention, RETENTION_INTERVAL_MS } from "../storage/retention.ts";
import { searchBackupFromStart } from "../storage/recovery.ts";
import { denoRewriteFs } from "../storage/rewrite.ts";
import type { ServiceState } from "./state.ts";
import { keptSpam, type SpamFilter } from "../spam/spam_filter.ts";

/** How often the block list takes in what `contactd unblock` changed. */
export const BLOCK_REFRESH_MS = 1000;

/**
 * How often the database's write-ahead log is emptied into its file (`wal_checkpoint(TRUNCATE)`):
 * a row deleted since (a delivered message, a reply sent, an expired block), overwritten in the
 * tables by `secure_delete`, is then gone from the log as well.
 */
export const CHECKPOINT_MS = 60_000;

/** What the upkeep needs of the world. */
export interface UpkeepIO {
  readonly log: Logger;
  /** The wall clock (ms since the epoch). */
  readonly wallNow: () => number;
  /** Calls `fn` every `ms`; returns the cancel. */
  readonly every: (fn: () => void, ms: number) => () => void;
}

/**
 * Runs `task` every `ms`, one run at a time (a tick while one runs is skipped), each failure
 * logged under `event`; the stack cancels it and waits for a run under way.
 */
function _periodic(
  stack: AsyncDisposableStack,
  io: UpkeepIO,
  ms: number,
  event: string,
  task: () => Promise<unknown>,
): void {
  let running: Promise<void> | undefined;
  const cancel = io.every(() => {
    running ??= task().then(
      () => {},
      (error) => io.log("error", { event, error: describeError(error) }),
    ).finally(() => running = undefined);
  }, ms);
  stack.defer(async () => {
    cancel();
    await running;
  });
}

/**
 * Starts the upkeep for `state` onto `stack`; retention's first run is awaited (before the first
 * POST). `deleteLater` sends erased messages' deletions to the chat.
 */
export async function startUpkeep(
  config: Config,
  io: UpkeepIO,
  stack: AsyncDisposableStack,
  state: ServiceState,
  forgotten: ForgottenIds,
  deleteLater: (deletions: readonly ChatDeletion[]) => void,
  spam?: SpamFilter,
  files?: ServiceFiles,
): Promise<void> {
  const { log } = io;
  const { blocks, replies, outbox, ledger, backup } = state;
  _periodic(stack, io, BLOCK_REFRESH_MS, "block_list_refresh_failed", () => blocks.refresh());
  if (spam !== undefined) {
    // contactd train's change is scored with within a second.
    _periodic(stack, io, BLOCK_REFRESH_MS, "spam_filter_refresh_failed", () => spam.refresh());
  }
  _periodic(stack, io, CHECKPOINT_MS, "database_checkpoint_failed", () => state.store.checkpoint());
  // The other kept state that holds something of a submission: retention and forget reach it.
  const kept: KeptFile[] = [{
    name: "blocked",
    prune: (cutoff) => blocks.prune(cutoff),
    forget: async (match, ids, dryRun) =>
      dryRun ? blocks.forgotten(match, ids).length : await blocks.forget(match, ids),
  }];
  // Replies and their sources, whether replies by email are on or not.
  if (spam !== undefined) kept.push(keptSpam(spam));
  kept.push(...keptReplies(state.store, replies, () => new Date(io.wallNow())));
  // Case pages, their replies and follow-ups (issue 33).
  kept.push(keptCases(state.store));
  // Files sent with forms (issue 32), whether ATTACHMENTS is on now or not.
  if (files !== undefined) kept.push(files.kept);
  const { retentionMs } = config;
  if (retentionMs !== undefined) {
    const retain = async () => {
      await applyRetention({
        appender: backup,
        fs: denoRewriteFs,
        path: config.messagesFile,
        outbox,
        now: io.wallNow,
        retentionMs,
        log,
        ledger,
        extra: kept,
      });
      await searchBackupFromStart(state.store);
      // What the prunes deleted leaves the log too.
      await state.store.checkpoint().catch((error) =>
        log("error", { event: "database_checkpoint_failed", error: describeError(error) })
      );
    };
    await retain();
    _periodic(stack, io, RETENTION_INTERVAL_MS, "retention_failed", retain);
  }
  // A forget the last run was working on when it stopped waits again: done at the first poll.
  await state.store.run("requests.reset", undefined);
  // contactd forget, run while the service runs, asks through its request; what it erased is
  // remembered while senders may still wait, so nothing of it is sent or recorded afterwards.
  _periodic(stack, io, FORGET_POLL_MS, "forget_request_failed", () =>
    serveForgetRequest({
      forgotten,
      pendingOnDisk: () => outbox.waiting(),
      appender: backup,
      fs: denoRewriteFs,
      path: config.messagesFile,
      store: state.store,
      outbox,
      now: io.wallNow,
      log,
      ledger,
      onChatDeletions: (deletions) => deleteLater(deletions),
      extra: kept,
    }));
}
