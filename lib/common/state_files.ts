/**
 * The names of the files contactd keeps beside `MESSAGES_FILE`, in one place: storage opens them,
 * the permission flags grant them (lib/config/permissions.ts), and `contactd pending` reads them.
 *
 * @module
 */

/** The outbox's path for a backup file path. */
export function outboxPath(messagesFile: string): string {
  return `${messagesFile}.outbox`;
}

/** The file a compaction of the outbox at `outbox` writes, then renames over it. */
export function compactionPath(outbox: string): string {
  return `${outbox}.tmp`;
}

/** Where damaged lines taken out of the outbox at `outbox` are kept for the operator. */
export function damagedPath(outbox: string): string {
  return `${outbox}.damaged`;
}

/** The file a rewrite of the backup file (retention, erasure) writes, then renames over it. */
export function rewritePath(messagesFile: string): string {
  return `${messagesFile}.rewrite`;
}

/** Where `contactd forget` leaves its request for a running service (lib/storage/forget_request.ts). */
export function forgetRequestPath(messagesFile: string): string {
  return `${messagesFile}.forget`;
}

/** Where a running service answers a `contactd forget` request. */
export function forgetAnswerPath(messagesFile: string): string {
  return `${messagesFile}.forget.answer`;
}

/** The lock file one running service holds for `messagesFile` and the files beside it. */
export function lockPath(messagesFile: string): string {
  return `${messagesFile}.lock`;
}

/**
 * Every file the service keeps for `messagesFile`: the backup file, the outbox, its compaction
 * file, its damaged lines, the lock, the backup file's rewrite file, and a `forget` request and
 * its answer.
 */
export function stateFiles(messagesFile: string): string[] {
  const outbox = outboxPath(messagesFile);
  return [
    messagesFile,
    outbox,
    compactionPath(outbox),
    damagedPath(outbox),
    lockPath(messagesFile),
    rewritePath(messagesFile),
    forgetRequestPath(messagesFile),
    forgetAnswerPath(messagesFile),
  ];
}

/** The directory holding `path` (`.` for a bare file name). */
export function directoryOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "." : path.slice(0, slash) || "/";
}
