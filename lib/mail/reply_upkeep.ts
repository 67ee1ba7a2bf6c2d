/**
 * Retention and erasure of what replies by email keep in the database (the replies and their
 * audits, and the reply sources), as two parts of the upkeep (lib/storage/erasure.ts
 * `KeptFile`): whether replies by email are on or not, so a reply kept while they were on is
 * still pruned and erased after they were turned off.
 *
 * @module
 */
import { formatTimestamp } from "../common/timestamp.ts";
import type { KeptFile } from "../storage/erasure.ts";
import type { Store } from "../storage/store.ts";
import type { ReplyStore } from "./reply_store.ts";

/**
 * The replies' and the reply sources' parts in retention and erasure. `replies` is the open
 * {@linkcode ReplyStore} while replies by email are on (so its memory follows), else `undefined`
 * (the database is changed directly); `now` dates an erased waiting reply's end. The caller
 * checkpoints the store after an erasure.
 */
export function keptReplies(
  store: Pick<Store, "run">,
  replies: Pick<ReplyStore, "prune" | "forget"> | undefined,
  now: () => Date,
): KeptFile[] {
  return [
    {
      name: "replies",
      prune: (cutoffMs) => {
        const before = formatTimestamp(new Date(cutoffMs));
        return replies?.prune(before) ?? store.run("replies.prune", { before });
      },
      forget: (_match, ids, dryRun) => {
        const submissions = [...ids];
        if (dryRun) return store.run("replies.count", { submissions });
        return replies?.forget(ids) ??
          store.run("replies.forget", { submissions, ts: formatTimestamp(now()) });
      },
    },
    {
      name: "reply_sources",
      prune: (cutoffMs) =>
        store.run("replySources.prune", { before: formatTimestamp(new Date(cutoffMs)) }),
      forget: (_match, ids, dryRun) =>
        dryRun
          ? store.run("replySources.count", { ids: [...ids] })
          : store.run("replySources.forget", { ids: [...ids] }),
    },
  ];
}
