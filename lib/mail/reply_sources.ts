/**
 * What a reply by email needs of the submission it answers (the contact, the message it quotes,
 * the subject field, the form, when it was received), kept in the database from acceptance until
 * `RETENTION` or erasure (lib/storage/sqlite/reply_sources_sql.ts), so the reply desk never reads
 * the backup file, however large. Only what a reply uses is kept: the message only when the
 * contact is an address a reply can go to.
 *
 * @module
 */
import type { StoredRecord } from "../storage/records.ts";
import type { OpArgs, Store } from "../storage/store.ts";
import { emailRecipient } from "./recipient.ts";

/** A submission's reply data, as the database keeps it. */
export type ReplySource = OpArgs<"replySources.add">;

/** The parts of an accepted submission a reply uses. */
export interface ReplySourceInput {
  readonly id: string;
  readonly ts: string;
  /** The form's id; absent for the default form. */
  readonly form?: string | undefined;
  readonly contact: string;
  readonly message: string;
  /** The form's other fields (lib/form/fields.ts); `subject` is the one a reply uses. */
  readonly fields?: Readonly<Record<string, string>> | undefined;
}

/**
 * The reply data of `submission`: its message only when its contact is an email address (a
 * reply to any other contact is refused, with the contact quoted, so the message is not needed).
 */
export function replySourceOf(submission: ReplySourceInput): ReplySource {
  const subject = submission.fields?.subject;
  return {
    id: submission.id,
    ts: submission.ts,
    form: submission.form ?? null,
    contact: submission.contact,
    message: emailRecipient(submission.contact) === undefined ? null : submission.message,
    subject: typeof subject === "string" ? subject : null,
  };
}

/**
 * The reply data of submission `id` in the shape of its backup record (lib/storage/records.ts
 * `StoredRecord`: `ts`, `form`, and `value` with `contact`, `message` and `fields.subject`), as
 * the reply desk takes it (lib/inbox/reply_desk.ts `findRecord`); `undefined` when none is kept
 * (past `RETENTION`, erased, or received while replies by email were off).
 */
export async function findReplySource(
  store: Pick<Store, "run">,
  id: string,
): Promise<StoredRecord | undefined> {
  const row = await store.run("replySources.get", { id });
  if (row === undefined) return undefined;
  const value = {
    id: row.id,
    ts: row.ts,
    ...(row.form === null ? {} : { form: row.form }),
    contact: row.contact,
    message: row.message ?? "",
    ...(row.subject === null ? {} : { fields: { subject: row.subject } }),
  };
  return {
    line: JSON.stringify(value),
    value,
    ts: row.ts,
    id: row.id,
    ...(row.form === null ? {} : { form: row.form }),
  };
}
