/**
 * The learned spam filter assembled (`SPAM_FILTER`): opened on the database at start (its model
 * read into memory and bounded), and what the POST path asks of it. No rule lives here: each is lib/spam/spam_filter.ts's.
 *
 * @module
 */
import type { Config } from "../config/config.ts";
import type { AcceptSpam } from "../http/accept.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { SpamFilter } from "../spam/spam_filter.ts";
import type { DeliveryQueue } from "../delivery/queue.ts";
import type { InboxDeps } from "../inbox/inbox.ts";
import { HELD_LISTED } from "../inbox/status_text.ts";
import type { Outbox } from "../storage/outbox.ts";
import type { Store } from "../storage/store.ts";

/**
 * Opens the filter on `store` (`false` after its `spam_filter_open_failed` line), bounded to its
 * size and aged by `RETENTION` at once; the stack closes it. Opened with `SPAM_FILTER=off` too:
 * what an earlier on-period kept (lessons, tokens, held submissions) is still aged and erased
 * (lib/service/upkeep.ts); only {@linkcode scoringFilter} gives it to the form and the chat.
 */
export async function openSpamFilter(
  config: Config,
  io: { readonly log: Logger; readonly wallNow: () => number },
  stack: AsyncDisposableStack,
  store: Store,
): Promise<SpamFilter | false> {
  try {
    const filter = await SpamFilter.open({ store, now: io.wallNow, log: io.log });
    stack.defer(() => filter.close());
    const cutoff = config.retentionMs === undefined ? undefined : io.wallNow() - config.retentionMs;
    await filter.prune(cutoff);
    const { spam, ham, ready } = filter.counts();
    io.log("info", { event: "spam_filter_loaded", mode: config.spamFilter, spam, ham, ready });
    return filter;
  } catch (error) {
    io.log("error", { event: "spam_filter_open_failed", error: describeError(error) });
    return false;
  }
}

/**
 * The filter the form handler and the chat use: `undefined` with `SPAM_FILTER=off` (nothing is
 * scored, kept or taught), while retention and erasure still reach what it holds.
 */
export function scoringFilter(config: Config, filter: SpamFilter): SpamFilter | undefined {
  return config.spamFilter === "off" ? undefined : filter;
}

/** What the POST path asks of `filter` under `SPAM_FILTER` (`config.spamFilter`). */
export function acceptSpam(config: Config, filter: SpamFilter): AcceptSpam {
  return {
    score: (submission) => filter.scored(submission),
    lesson: (submission, features) => filter.lesson(submission, features),
    keepHeld: (submission, spamScore, also) => filter.hold(submission, spamScore, also),
    hold: config.spamFilter === "hold",
  };
}

/** How many held submissions, the newest, `/held` looks through for a chat's. */
const HELD_SCAN = 1000;

/**
 * `/held` and its release buttons over `filter` (`SPAM_FILTER=hold`): what was held for a chat
 * (its forms' submissions, `chatOf`), newest first, and a release that sends the submission as a
 * new notification without its mark: its outbox row and its held row's removal are committed in
 * one transaction (its record was written when it was held), then the queue sends it.
 */
export function heldInChat(
  filter: SpamFilter,
  chatOf: (form: string | undefined) => number,
  outbox: Pick<Outbox, "add" | "recordedSoon">,
  queue: Pick<DeliveryQueue, "submit">,
  log: Logger,
): Required<Pick<InboxDeps, "held" | "release">> {
  return {
    held: async (chat) => {
      const items = (await filter.held(HELD_SCAN)).items.filter((item) =>
        chatOf(item.form) === chat
      );
      return { items: items.slice(0, HELD_LISTED), count: items.length };
    },
    release: async (id, chat) => {
      // Found by its id, however many are held: a failed add leaves it held (pressed again).
      const submission = await filter.release(
        id,
        (submission, also) => outbox.add(submission, also),
        (item) => chatOf(item.form) === chat,
      );
      if (submission === undefined) return false;
      // Its record was written when it was held: the row is noted recorded.
      await outbox.recordedSoon(id, 200);
      queue.submit(submission, true).then(
        (outcome) => log("info", { event: "spam_release_sent", id, ok: outcome.ok }),
        (error) => log("error", { event: "spam_release_failed", id, error: describeError(error) }),
      );
      return true;
    },
  };
}
