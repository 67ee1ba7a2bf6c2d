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

/** The chat ledger: what contactd sent to the chat for each submission, and its state (lib/storage/ledger.ts). */
export function ledgerPath(messagesFile: string): string {
  return `${messagesFile}.chat`;
}

/** The block list: senders marked as spam (lib/spam/). */
export function blockListPath(messagesFile: string): string {
  return `${messagesFile}.blocked`;
}

/** The replies to senders by email, waiting and done (lib/mail/). */
export function repliesPath(messagesFile: string): string {
  return `${messagesFile}.replies`;
}

/** Where the chat's updates were read up to (`getUpdates` offset, lib/inbox/). */
export function updatesOffsetPath(messagesFile: string): string {
  return `${messagesFile}.updates`;
}

/**
 * The SQLite database holding the service's state (lib/storage/store.ts); SQLite keeps its
 * `-wal` and `-shm` files beside it, outside Deno's permission checks.
 */
export function databasePath(messagesFile: string): string {
  return `${messagesFile}.db`;
}

/** The directory of the files sent with forms (`ATTACHMENTS`, lib/files/spool.ts). */
export function filesDirectory(messagesFile: string): string {
  return `${messagesFile}.files`;
}

/** The lock file one running service holds for `messagesFile` and the files beside it. */
export function lockPath(messagesFile: string): string {
  return `${messagesFile}.lock`;
}

/**
 * Every file the service keeps for `messagesFile`: the backup file, the database, and the files
 * of releases before the database (imported into it at start, then removed): the outbox, its
 * compaction
 * file, its damaged lines, the lock, the backup file's rewrite file, a `forget` request and
 * its answer, the chat ledger, the block list, the replies and the updates offset (each with the
 * `.tmp` file it is rewritten through), and the directory of the files sent with forms.
 */
export function stateFiles(messagesFile: string): string[] {
  const outbox = outboxPath(messagesFile);
  return [
    messagesFile,
    databasePath(messagesFile),
    outbox,
    compactionPath(outbox),
    damagedPath(outbox),
    lockPath(messagesFile),
    rewritePath(messagesFile),
    `${messagesFile}.forget`,
    `${messagesFile}.forget.answer`,
    ledgerPath(messagesFile),
    `${ledgerPath(messagesFile)}.tmp`,
    blockListPath(messagesFile),
    `${blockListPath(messagesFile)}.tmp`,
    repliesPath(messagesFile),
    `${repliesPath(messagesFile)}.tmp`,
    updatesOffsetPath(messagesFile),
    `${updatesOffsetPath(messagesFile)}.tmp`,
    filesDirectory(messagesFile),
  ];
}

/** The directory holding `path` (`.` for a bare file name). */
export function directoryOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "." : path.slice(0, slash) || "/";
}
