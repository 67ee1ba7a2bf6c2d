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
import { call, type Store, type StoreCall } from "../storage/store.ts";
import { decoyKey, type DecoyKind, DecoyPages } from "./decoy.ts";
import type { PagePost } from "./page.ts";
import { newToken, sameHash, tokenHash, tokenOfPath } from "./token.ts";
import { MAX_UNANSWERED } from "./waiting.ts";

/** A case as found by its token (or a decoy's page, lib/cases/decoy.ts). */
export interface FoundCase {
  /** Its submission's id (empty for a decoy's page). */
  readonly id: string;
  readonly form: string | null;
  readonly posts: readonly PagePost[];
  /** Closed for writing: its notification is marked Handled or Spam. */
  readonly closed: boolean;
  /**
   * A decoy's page only (no case): shows what the sender writes back on that page, and nowhere
   * else.
   */
  readonly decoy?: ((post: { ts: string; text: string }) => boolean) | undefined;
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
  #decoys: Promise<DecoyPages> | undefined;

  /** `fill` makes the tokens' random bytes (default `crypto.getRandomValues`). */
  constructor(store: Pick<Store, "run">, fill?: (bytes: Uint8Array) => Uint8Array) {
    this.#store = store;
    this.#fill = fill;
  }

  /**
   * A decoy's token (lib/cases/decoy.ts: no case, nothing stored), for a success that opened no
   * case; its page shows `first` (the sender's message) when given, as a real one would.
   */
  async decoy(
    first?: { ts: string; message: string },
    kind: DecoyKind = "honeypot",
  ): Promise<string> {
    const pages = await this.#decoyPages();
    return pages.issue(
      first === undefined ? undefined : { ts: first.ts, text: first.message },
      kind,
    );
  }

  /** The decoys, under the install's key (read from the store once; again after a failure). */
  #decoyPages(): Promise<DecoyPages> {
    this.#decoys ??= decoyKey(this.#store, this.#fill).then(
      (key) => new DecoyPages(key, this.#fill),
      (error) => {
        this.#decoys = undefined;
        throw error;
      },
    );
    return this.#decoys;
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

  /**
   * The case of the page at `path` (`/api/case/<token>`), or the decoy's page it is;
   * `undefined` for any unknown one. A decoy's token is looked up in the database too, so
   * reading one costs what reading a real one does.
   */
  async find(path: string): Promise<FoundCase | undefined> {
    const token = tokenOfPath(path);
    if (token === undefined) return undefined;
    const hash = await tokenHash(token);
    const row = await this.#store.run("cases.byHash", { hash });
    if (row !== undefined && sameHash(new Uint8Array(row.hash), hash)) {
      return { id: row.id, form: row.form, posts: row.posts, closed: row.state !== "open" };
    }
    const decoys = await this.#decoyPages();
    if (!decoys.isDecoy(token)) return undefined;
    return {
      id: "",
      form: null,
      posts: decoys.posts(token),
      closed: false,
      decoy: (post) => decoys.add(token, post),
    };
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
