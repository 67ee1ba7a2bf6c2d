/**
 * The service's learned spam filter: the classifier's model (lib/learn/classifier.ts) read from
 * the database (lib/storage/sqlite/spam_sql.ts, through {@linkcode Store}) into memory at open,
 * so that scoring a submission never waits for SQLite; every change is written first and counts
 * in memory once committed. Each accepted submission's features (lib/learn/features.ts) are
 * kept as its lesson (until `RETENTION` or its erasure); a press teaches its label, an undone press takes it back, exactly.
 * `contactd train` changes the rows from its own connection; {@linkcode SpamFilter.refresh},
 * called every second, reads them again when another connection has committed since
 * (`PRAGMA data_version`).
 *
 * @module
 */
import { dayOf, type Label, type Model, ready, score, type TokenRow } from "../learn/classifier.ts";
import { features } from "../learn/features.ts";
import type { TokenSource } from "../learn/tokens.ts";
import { serial } from "../common/serial.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { describeError, type Logger } from "../log/logger.ts";
import type { KeptFile } from "../storage/erasure.ts";
import { type OutboxSubmission, submissionOf, submissionText } from "../storage/outbox.ts";
import { call, type Store, type StoreCall } from "../storage/store.ts";

/**
 * At most this many token rows are kept: beyond it the rarest (a word one example held), the
 * oldest first, are pruned. 50,000 rows are a few megabytes, and a contact form's vocabulary
 * stays well under it.
 */
export const MAX_MODEL_TOKENS = 50_000;

/** A submission as the filter reads it: its id, when it came, and what its sender wrote. */
export interface FilterSubmission extends TokenSource {
  readonly id: string;
  readonly ts: string;
}

/** A submission's score and the features it was scored by ({@linkcode SpamFilter.scored}). */
export interface Scored {
  /** `undefined` while the model does not score yet. */
  readonly score: number | undefined;
  /** Its features (lib/learn/features.ts): what its lesson keeps. */
  readonly features: readonly string[];
}

/** A held submission as `/held` lists it: no text of the sender's. */
export interface HeldItem {
  readonly id: string;
  readonly ts: string;
  readonly form?: string;
  readonly score: number;
}

/** How many examples the model has learnt, for `/status`. */
export interface FilterCounts {
  readonly spam: number;
  readonly ham: number;
  /** Whether it scores yet ({@linkcode ready}). */
  readonly ready: boolean;
}

/** What {@linkcode SpamFilter} works with. */
export interface SpamFilterDeps {
  readonly store: Store;
  /** The wall clock, ms since the epoch. */
  readonly now: () => number;
  readonly log: Logger;
}

/** The in-memory model of the rows `spam.model` (or a change) returned. */
function _apply(model: Model, rows: readonly (readonly [string, number, number, number])[]): void {
  for (const [token, spam, ham, seen] of rows) {
    if (spam === 0 && ham === 0) model.tokens.delete(token);
    else model.tokens.set(token, { spam, ham, seen });
  }
}

/** A held row as `/held` lists it. */
function _heldItem(
  { id, ts, form, score }: { id: string; ts: string; form: string | null; score: number },
): HeldItem {
  return { id, ts, score, ...(form === null ? {} : { form }) };
}

/**
 * The learned filter of a running service (or of a command). Its writes run one after another;
 * each first takes in what another connection changed.
 */
export class SpamFilter {
  readonly #deps: SpamFilterDeps;
  #model: Model;
  #version: number;
  #closed = false;
  readonly #serial = serial();

  private constructor(deps: SpamFilterDeps, model: Model, version: number) {
    this.#deps = deps;
    this.#model = model;
    this.#version = version;
  }

  /** Reads the model from `deps.store`. Rejects (a `StoreError`) when it cannot be read. */
  static async open(deps: SpamFilterDeps): Promise<SpamFilter> {
    const version = await deps.store.run("meta.dataVersion", undefined);
    return new SpamFilter(deps, await SpamFilter.#load(deps.store), version);
  }

  static async #load(store: Store): Promise<Model> {
    const rows = await store.run("spam.model", undefined);
    const model: Model = { tokens: new Map<string, TokenRow>(), totals: { ...rows.totals } };
    _apply(model, rows.tokens);
    return model;
  }

  /** The examples learnt, and whether the model scores yet. */
  counts(): FilterCounts {
    const { spam, ham } = this.#model.totals;
    return { spam, ham, ready: ready(this.#model) };
  }

  /**
   * The spam score of `submission` (0 to 1, lib/learn/classifier.ts `score`), `undefined` while
   * the model has not learnt enough examples of both kinds (`MIN_EXAMPLES`). Synchronous: the
   * model is in memory.
   */
  score(submission: TokenSource): number | undefined {
    if (!ready(this.#model)) return undefined;
    return this.#scoreOf(features(submission));
  }

  /**
   * {@linkcode SpamFilter.score} with the features it scored (lib/learn/features.ts), computed
   * once: {@linkcode SpamFilter.lesson} takes them, so an accepted submission's lesson keeps
   * exactly what it was scored by. The features come even while the model does not score.
   */
  scored(submission: TokenSource): Scored {
    const found = features(submission);
    return { score: ready(this.#model) ? this.#scoreOf(found) : undefined, features: found };
  }

  #scoreOf(found: readonly string[]): number {
    return Math.round(score(this.#model, found) * 1000) / 1000;
  }

  /**
   * The call that keeps what `submission` would teach (its lesson): `tokens`, the features it was
   * scored by ({@linkcode SpamFilter.scored}); absent, computed here.
   */
  lesson(
    submission: FilterSubmission,
    tokens: readonly string[] = features(submission),
  ): StoreCall {
    return call("spam.keep", { submission: submission.id, ts: submission.ts, tokens });
  }

  /**
   * Teaches that submission `id` is `label` (`null`: takes back what a press taught, an undo).
   * Resolves true when the model changed; false when its lesson is not kept (past retention,
   * erased, a submission from before the filter) or already says so. Logs `spam_taught`.
   */
  teach(id: string, label: Label | null): Promise<boolean> {
    return this.#write((store) => this.#teach(store, id, label));
  }

  async #teach(store: Store, id: string, label: Label | null): Promise<boolean> {
    const day = dayOf(this.#deps.now());
    const change = await store.run("spam.teach", { submission: id, label, day });
    if (change === undefined) return false;
    _apply(this.#model, change.rows);
    this.#model.totals.spam = change.totals.spam;
    this.#model.totals.ham = change.totals.ham;
    // Bounded between retention's prunes too (without RETENTION there are none but at start).
    if (this.#model.tokens.size > MAX_MODEL_TOKENS) {
      await store.run("spam.prune", { maxTokens: MAX_MODEL_TOKENS });
      await this.#reload(store);
    }
    this.#deps.log("info", { event: "spam_taught", id, label: label ?? "none" });
    return true;
  }

  /**
   * `SPAM_FILTER=hold`: keeps `submission` (its score `spamScore`) until the owner releases it,
   * `RETENTION` or its erasure, with `also` (its case's opening) in the same transaction.
   * Rejects when it cannot be written (then nothing of it is).
   */
  async hold(
    submission: OutboxSubmission,
    spamScore: number,
    also: readonly StoreCall[] = [],
  ): Promise<void> {
    await this.#deps.store.transaction([
      call("spam.hold", {
        id: submission.id,
        ts: submission.ts,
        form: submission.form ?? null,
        score: spamScore,
        submission: submissionText(submission),
      }),
      ...also,
    ]);
  }

  /** The held submissions, newest first (at most `limit`), and how many there are. */
  held(limit: number): Promise<{ items: HeldItem[]; count: number }> {
    return this.#deps.store.run("spam.held", { limit }).then(({ items, count }) => ({
      count,
      items: items.map(_heldItem),
    }));
  }

  /**
   * Releases held submission `id` when `mine` accepts it (its chat): hands it (without its
   * score) to `send` with the call that removes its held row, to be committed in one transaction
   * (lib/storage/outbox.ts `Outbox.add`: a crash cannot lose it between the two), then teaches
   * the filter it is not spam. Resolves with it, or `undefined` when it is not held (released
   * already, past `RETENTION`, erased) or not `mine`. Rejects when `send` does (still held).
   */
  release(
    id: string,
    send: (submission: OutboxSubmission, also: readonly StoreCall[]) => Promise<void>,
    mine: (item: HeldItem) => boolean = () => true,
  ): Promise<OutboxSubmission | undefined> {
    return this.#write(async (store) => {
      const row = await store.run("spam.heldOne", { id });
      if (row === undefined || !mine(_heldItem(row))) return undefined;
      const held = submissionOf(row, row.submission);
      if (held === undefined) {
        this.#deps.log("error", { event: "spam_held_damaged", id });
        return undefined;
      }
      // The owner said it is not spam: sent without the score that would mark it again.
      const { spamScore: _score, ...submission } = held;
      await send(submission, [call("spam.unhold", { id })]);
      // Sent on: a failure to teach must not undo that (it is logged only).
      await this.#teach(store, id, "ham").catch((error) =>
        this.#deps.log("error", { event: "spam_teach_failed", id, error: describeError(error) })
      );
      this.#deps.log("info", { event: "spam_released", id });
      return submission;
    });
  }

  /** Takes in what another connection (`contactd train`, `forget`) changed; called every second. */
  refresh(): Promise<void> {
    return this.#write(() => Promise.resolve());
  }

  /**
   * Retention: drops the lessons of submissions received before `cutoffMs` (their counts stay)
   * and the tokens not taught since that day; then bounds the rows to
   * {@linkcode MAX_MODEL_TOKENS}. Returns how many lessons and tokens went.
   */
  prune(cutoffMs: number | undefined): Promise<number> {
    return this.#write(async (store) => {
      const gone = await store.run("spam.prune", {
        ...(cutoffMs === undefined ? {} : {
          before: formatTimestamp(new Date(cutoffMs)),
          olderThanDay: dayOf(cutoffMs),
        }),
        maxTokens: MAX_MODEL_TOKENS,
      });
      await this.#reload(store);
      return gone.lessons + gone.tokens;
    });
  }

  /**
   * Erasure: subtracts what the submissions `ids` taught and removes their lessons (`dryRun`:
   * counts them only). Returns how many lessons.
   */
  forget(ids: ReadonlySet<string>, dryRun: boolean): Promise<number> {
    const submissions = [...ids];
    if (dryRun) return this.#deps.store.run("spam.count", { submissions });
    return this.#write(async (store) => {
      const day = dayOf(this.#deps.now());
      const count = await store.run("spam.forget", { submissions, day });
      if (count > 0) await this.#reload(store);
      return count;
    });
  }

  /** Waits for the calls under way; later calls reject. The store stays open (its owner's). */
  close(): Promise<void> {
    return this.#serial(() => {
      this.#closed = true;
      return Promise.resolve();
    });
  }

  async #reload(store: Store): Promise<void> {
    this.#model = await SpamFilter.#load(store);
  }

  #write<T>(task: (store: Store) => Promise<T>): Promise<T> {
    return this.#serial(async () => {
      if (this.#closed) throw new Deno.errors.BadResource("the spam filter is closed");
      const { store } = this.#deps;
      const version = await store.run("meta.dataVersion", undefined);
      if (version !== this.#version) {
        await this.#reload(store);
        this.#version = version;
      }
      return await task(store);
    });
  }
}

/**
 * The filter as retention and `forget` reach it (lib/storage/erasure.ts `KeptFile`): its lessons
 * and its aged tokens ({@linkcode SpamFilter.prune}), an erased submission's contribution
 * ({@linkcode SpamFilter.forget}).
 */
export function keptSpam(filter: SpamFilter): KeptFile {
  return {
    name: "spam_filter",
    prune: (cutoffMs) => filter.prune(cutoffMs),
    forget: (_match, ids, dryRun) => filter.forget(ids, dryRun),
  };
}
