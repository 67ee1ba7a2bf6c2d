/**
 * What `contactd pending` and `check` read, written through the store's own operations: outbox
 * rows and replies (in a database of tests/support/temp_store.ts).
 *
 * @module
 */
import { type OutboxSubmission, submissionText } from "../../lib/storage/outbox.ts";
import type { Store } from "../../lib/storage/store.ts";

/** Adds a submission to the outbox, with `failures` failed attempts (the last one's error). */
export async function addWaiting(
  store: Store,
  id: string,
  ts: string,
  options: {
    failures?: string[];
    submission?: Partial<OutboxSubmission>;
    status?: number | null;
  } = {},
): Promise<void> {
  const submission: OutboxSubmission = {
    id,
    ts,
    name: "Ann",
    contact: "ann@example.org",
    message: "hello",
    ip: "192.0.2.1",
    ...options.submission,
  };
  // As the service's outbox writes it (lib/storage/outbox.ts): the form in its own column.
  await store.run("outbox.add", {
    id,
    ts,
    form: submission.form,
    submission: submissionText(submission),
  });
  for (const error of options.failures ?? []) {
    await store.run("outbox.failed", { id, ts, error });
  }
  if (options.status !== undefined) {
    await store.run("outbox.recorded", { id, status: options.status });
  }
}

/** Adds a reply waiting to be emailed. */
export async function addReply(store: Store, id: string, ts: string): Promise<void> {
  await store.run("replies.add", {
    id,
    submission: `s-${id}`,
    ts,
    chat: 42,
    message: 7,
    draft: JSON.stringify({
      to: "carla@example.org",
      subject: "Re: hours",
      text: "we open at nine",
      quoted: { ts, message: "when do you open?" },
    }),
    masked: "c•••@example.org",
  });
}
