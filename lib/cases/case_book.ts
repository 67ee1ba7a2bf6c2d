/**
 * The cases of a running service (and of a command) over the store: a case opened for each
 * accepted submission (its token returned once, only its hash kept), found by its token, the
 * owner's replies and the sender's follow-ups posted to it, and its part in retention and
 * erasure. A follow-up's submission id is remembered with its case, so the send queue can post
 * it as a reply to the case's notification, after a restart too.
 *
 * @module
 */
import { formatTimestamp } from "../common/timestamp.ts";
import type { KeptFile } from "../storage/erasure.ts";
import { call, type OpResult, type Store, type StoreCall } from "../storage/store.ts";
import { newToken, sameHash, tokenHash, tokenOfPath } from "./token.ts";
import { MAX_UNANSWERED } from "./waiting.ts";

/** A case as found by its token. */
export interface FoundCase {
  /** Its submission's id. */
  readonly id: string;
  readonly form: string | null;
  readonly posts: NonNullable<OpResult<"cases.get">>["posts"];
  /** Closed for writing: its notification is marked Handled or Spam. */
  readonly closed: boolean;
}

/** What a case is opened with: the accepted submission. */
export interface CaseSubmission {
  readonly id: string;
  readonly ts: string;
  readonly form?: string | undefined;
  readonly message: string;
}

/** The cases over `store`. */
export class CaseBook {
  readonly #store: Pick<Store, "run">;
  readonly #fill: ((bytes: Uint8Array) => Uint8Array) | undefined;

  /** `fill` makes the tokens' random bytes (default `crypto.getRandomValues`). */
  constructor(store: Pick<Store, "run">, fill?: (bytes: Uint8Array) => Uint8Array) {
    this.#store = store;
    this.#fill = fill;
  }

  /** Opens the case of `submission` and resolves with its token (never kept, only its hash). */
  async open(submission: CaseSubmission): Promise<string> {
    const token = newToken(this.#fill);
    await this.#store.run("cases.open", await _caseRow(submission, token));
    return token;
  }

  /**
   * The case of `submission` to be opened by its caller's transaction (a held submission's, with
   * its held row: lib/spam/spam_filter.ts `SpamFilter.hold`): its token, and the call that opens it.
   */
  async opening(submission: CaseSubmission): Promise<{ token: string; call: StoreCall }> {
    const token = newToken(this.#fill);
    return { token, call: call("cases.open", await _caseRow(submission, token)) };
  }

  /** The case of the page at `path` (`/api/case/<token>`); `undefined` for any unknown one. */
  async find(path: string): Promise<FoundCase | undefined> {
    const token = tokenOfPath(path);
    if (token === undefined) return undefined;
    const hash = await tokenHash(token);
    const row = await this.#store.run("cases.byHash", { hash });
    if (row === undefined || !sameHash(new Uint8Array(row.hash), hash)) return undefined;
    return { id: row.id, form: row.form, posts: row.posts, closed: row.state !== "open" };
  }

  /** Whether submission `id` has a case. */
  async has(id: string): Promise<boolean> {
    return (await this.#store.run("cases.get", { id })) !== undefined;
  }

  /**
   * Posts to case `caseId`: an owner's reply (`ref`: its `chat:message`) or a sender's follow-up
   * (`ref`: its submission id). `false` when the case is gone or `ref` was posted before.
   */
  async post(
    caseId: string,
    post: { ref: string; ts: string; author: "owner" | "sender"; text: string },
  ): Promise<boolean> {
    return await this.#store.run("cases.post", { caseId, ...post });
  }

  /**
   * The call that posts a sender's follow-up to case `caseId` in the caller's transaction (a held
   * follow-up's, with its held row: its page shows it as any other's).
   */
  posting(
    caseId: string,
    post: { ref: string; ts: string; author: "sender"; text: string },
  ): StoreCall {
    return call("cases.followUp", { caseId, ...post, max: MAX_UNANSWERED });
  }

  /** The case a follow-up submission `id` belongs to, or `undefined` (not a follow-up). */
  caseOf(id: string): Promise<string | undefined> {
    return this.#store.run("cases.ofPost", { ref: id }).then((found) =>
      found === id ? undefined : found
    );
  }
}

/** The `cases.open` row of `submission`, whose page's token is `token` (only its hash kept). */
async function _caseRow(submission: CaseSubmission, token: string) {
  return {
    id: submission.id,
    hash: await tokenHash(token),
    ts: submission.ts,
    form: submission.form ?? null,
    message: submission.message,
  };
}

/** The cases' part in retention and erasure (lib/storage/erasure.ts `KeptFile`). */
export function keptCases(store: Pick<Store, "run">): KeptFile {
  return {
    name: "cases",
    prune: (cutoffMs) => store.run("cases.prune", { before: formatTimestamp(new Date(cutoffMs)) }),
    forget: (_match, ids, dryRun) =>
      store.run(dryRun ? "cases.count" : "cases.forget", { ids: [...ids] }),
  };
}
