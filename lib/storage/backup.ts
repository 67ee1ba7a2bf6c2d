/**
 * The private backup file: one JSON line per accepted submission, synced before the answer.
 *
 * @module
 */
import { type Appender, createGroupAppender } from "./group_commit.ts";
import { pathSource, trackFile } from "./tracked_file.ts";
import type { ReceivedFile } from "../files/multipart_stream.ts";

/** One line of the backup file; keys in this order. */
export interface BackupRecord {
  /** UTC, whole seconds, trailing `Z`. */
  readonly ts: string;
  /**
   * The submission's id, the `#id` of its notification (lib/form/submission_id.ts). Records
   * written before ids were kept have none: every reader takes such a record as valid.
   */
  readonly id: string;
  readonly name: string;
  readonly contact: string;
  readonly message: string;
  readonly ip: string;
  readonly messenger_ok: boolean;
  readonly messenger_error: string | null;
  /** The form of `FORMS` it came from; absent for the default form (`POST /api/contact`). */
  readonly form?: string | undefined;
  /** The form's other fields, in the order sent (lib/form/fields.ts); absent when none. */
  readonly fields?: Readonly<Record<string, string>> | undefined;
  /**
   * The learned spam filter's score, 0 (not spam) to 1 (spam), lib/spam/spam_filter.ts; absent
   * when it did not score (`SPAM_FILTER=off`, or too few examples learnt yet).
   */
  readonly spam_score?: number | undefined;
  /**
   * The files sent with it (lib/files/multipart_stream.ts), in order: written as `name` (the
   * sender's, cleaned: a label), `size`, `type` (from the content) and `sha256`; absent when none.
   */
  readonly files?: readonly ReceivedFile[] | undefined;
  /**
   * The case (its first submission's id) this submission follows up, written on the sender's
   * case page (lib/cases/); absent for any other. Erasing the case erases it too.
   */
  readonly follow_up?: string | undefined;
}

/** Serialises a record as one line (JSON escapes every newline inside values). */
export function formatRecord(record: BackupRecord): string {
  const { ts, id, name, contact, message, ip, messenger_ok, messenger_error } = record;
  const { form, fields, spam_score, files, follow_up } = record;
  return JSON.stringify({
    ts,
    id,
    name,
    contact,
    message,
    ip,
    messenger_ok,
    messenger_error,
    ...(form === undefined ? {} : { form }),
    ...(follow_up === undefined ? {} : { follow_up }),
    ...(fields === undefined ? {} : { fields }),
    ...(spam_score === undefined ? {} : { spam_score }),
    ...(files === undefined || files.length === 0 ? {} : {
      files: files.map(({ name, size, type, sha256 }) => ({ name, size, type, sha256 })),
    }),
  }) + "\n";
}

/**
 * Opens `path` for append, creating it with mode 0600. Throws at once if it cannot be opened,
 * so a bad path stops start-up instead of losing the first message. `onLoose` is told when a
 * file it opens (at start or after a rotation) is readable or writable by group or others.
 */
export async function openBackupFile(
  path: string,
  onLoose: (mode: number) => void = () => {},
): Promise<Appender> {
  const source = pathSource(path, onLoose);
  // Concurrent records share one write and one fsync (bench/sync.ts measures what it pays).
  return createGroupAppender(trackFile(await source.open(), source));
}
