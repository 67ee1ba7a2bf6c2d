/**
 * The spam classifier: token counts learnt from the owner's presses, and the score of a new
 * submission from them, as bogofilter and SpamBayes compute it: each token's spam probability
 * by Gary Robinson's f(w) (a Bayesian estimate that starts at `x` and moves with the evidence,
 * `s` saying how much evidence equals the prior), the tokens far enough from 0.5 combined by
 * Fisher's method (the chi-square test, Robinson's refinement) into a score from 0 (not spam) to
 * 1 (spam). Each token counts once per submission.
 *
 * The model is plain data behind {@linkcode TokenCounts}: a `Map` fits it (tests, the
 * benchmark), and so can a table `(token TEXT PRIMARY KEY, spam INTEGER, ham INTEGER, seen
 * INTEGER)` with the examples' totals beside it.
 *
 * @module
 */

/** What the model knows of one token: how many spam and not-spam examples held it, and when. */
export interface TokenRow {
  /** Spam examples that held the token. */
  readonly spam: number;
  /** Not-spam examples that held the token. */
  readonly ham: number;
  /** The day an example last taught the token ({@linkcode dayOf}: days since the epoch, UTC). */
  readonly seen: number;
}

/**
 * The token rows, by token. A `Map<string, TokenRow>` is one; a store may implement it over a
 * table (`get` a select by key, `set` an upsert, `delete` a delete, `entries` a scan).
 */
export interface TokenCounts {
  /** The row of `token`, if any example taught it. */
  get(token: string): TokenRow | undefined;
  /** Writes the row of `token`. */
  set(token: string, row: TokenRow): unknown;
  /** Removes the row of `token`. */
  delete(token: string): unknown;
  /** How many tokens have a row. */
  readonly size: number;
  /** Every row (for pruning). */
  entries(): Iterable<readonly [string, TokenRow]>;
}

/** How many examples of each kind the model has learnt. */
export interface Totals {
  /** Spam examples. */
  spam: number;
  /** Not-spam examples. */
  ham: number;
}

/** The classifier's state: token rows and the examples' totals. */
export interface Model {
  /** The token rows. */
  readonly tokens: TokenCounts;
  /** The examples' totals (written by {@linkcode learn}). */
  readonly totals: Totals;
}

/** A label an owner's press gives. */
export type Label = "spam" | "ham";

/** The parameters of {@linkcode score}, chosen by `bench/spam_bench.ts`. */
export interface ScoreOptions {
  /** Robinson's s: how many examples' worth of weight the prior `x` has. */
  readonly s: number;
  /** Robinson's x: the probability assumed for a token never seen. */
  readonly x: number;
  /** Tokens whose f(w) is nearer 0.5 than this are left out. */
  readonly minStrength: number;
  /** At most this many tokens (the most extreme) are combined. */
  readonly maxTokens: number;
}

/** The parameters contactd scores with (`bench/spam_bench.ts` measured them). */
export const SCORE_OPTIONS: ScoreOptions = { s: 0.45, x: 0.5, minStrength: 0.1, maxTokens: 150 };

/**
 * A score at or above this is spam (the owner's notification is marked): chosen with
 * `bench/spam_bench.ts` (SpamBayes's spam cut-off), where not-spam scores cluster near 0 and spam
 * near 1. Of 0.7, 0.8, 0.85, 0.9 and 0.95, the lowest whose mean share of not-spam flagged after
 * 500 presses stays within the goal's 0.5 % on the seeds 1–10 and 201–210 (0.85 flags 0.6 % on
 * 201–210).
 */
export const SPAM_THRESHOLD = 0.9;

/** Whether a score says spam: at or above {@linkcode SPAM_THRESHOLD}; no score says nothing. */
export function looksLikeSpam(spamScore: number | undefined): boolean {
  return spamScore !== undefined && spamScore >= SPAM_THRESHOLD;
}

/**
 * Examples of each kind the model needs before its score is used ({@linkcode ready}): in
 * `bench/spam_bench.ts`, the share of not-spam flagged is about 0.3 % on average from 10 spam
 * examples on, but its worst draw falls to about 1 % only from some 20 spam and 40 not-spam.
 */
export const MIN_EXAMPLES = { spam: 20, ham: 40 } as const;

/** The day of `epochMs` (milliseconds since the Unix epoch): whole days since it, in UTC. */
export function dayOf(epochMs: number): number {
  return Math.floor(epochMs / 86_400_000);
}

/** An empty in-memory model (a `Map` of rows). */
export function emptyModel(): Model {
  return { tokens: new Map<string, TokenRow>(), totals: { spam: 0, ham: 0 } };
}

/** True once the model has learnt enough examples of both kinds for its score to mean much. */
export function ready(model: Model): boolean {
  return model.totals.spam >= MIN_EXAMPLES.spam && model.totals.ham >= MIN_EXAMPLES.ham;
}

/**
 * Teaches (`delta` 1) or unteaches (`delta` -1: an undone press) that the submission of
 * `tokens` is `label`, on `day` (days since the epoch). Each distinct token counts once. Counts
 * never go below zero; a token whose counts reach zero loses its row, so learning then
 * unlearning the same example leaves the counts and totals as they were (a surviving row keeps
 * the later `seen` day: unlearning does not make a token older).
 */
export function learn(
  model: Model,
  tokens: Iterable<string>,
  label: Label,
  delta: 1 | -1,
  day: number,
): void {
  const totals = model.totals;
  totals[label] = Math.max(0, totals[label] + delta);
  for (const token of new Set(tokens)) {
    const row = model.tokens.get(token) ?? { spam: 0, ham: 0, seen: day };
    const next = { ...row, [label]: Math.max(0, row[label] + delta) };
    if (next.spam === 0 && next.ham === 0) model.tokens.delete(token);
    else model.tokens.set(token, delta > 0 ? { ...next, seen: Math.max(row.seen, day) } : next);
  }
}

/** Robinson's f(w) of one row: the token's spam probability, pulled toward `x` by `s`. */
export function tokenProbability(
  row: TokenRow | undefined,
  totals: Totals,
  options: ScoreOptions = SCORE_OPTIONS,
): number {
  if (row === undefined) return options.x;
  const spamRatio = row.spam / Math.max(1, totals.spam);
  const hamRatio = row.ham / Math.max(1, totals.ham);
  const p = spamRatio + hamRatio === 0 ? options.x : spamRatio / (spamRatio + hamRatio);
  const n = row.spam + row.ham;
  return (options.s * options.x + n * p) / (options.s + n);
}

/** The chi-square distribution's upper tail at `chi` for `df` (even) degrees of freedom. */
function _chi2Q(chi: number, df: number): number {
  const m = chi / 2;
  let term = Math.exp(-m);
  let sum = term;
  for (let i = 1; i < df / 2; i++) {
    term *= m / i;
    sum += term;
  }
  return Math.min(sum, 1);
}

/**
 * The spam score of the submission of `tokens`, from 0 (not spam) to 1 (spam); 0.5 when no
 * token says anything. Each distinct token's f(w); those at least `minStrength` from 0.5, the
 * `maxTokens` most extreme, combined by Fisher's method both ways: (1 + H - S) / 2, where H and S
 * are how unlikely the probabilities are as spam and as not-spam evidence.
 */
export function score(
  model: Model,
  tokens: Iterable<string>,
  options: ScoreOptions = SCORE_OPTIONS,
): number {
  const clues: number[] = [];
  for (const token of new Set(tokens)) {
    const f = tokenProbability(model.tokens.get(token), model.totals, options);
    if (Math.abs(f - 0.5) >= options.minStrength) clues.push(f);
  }
  if (clues.length === 0) return 0.5;
  if (clues.length > options.maxTokens) {
    clues.sort((a, b) => Math.abs(b - 0.5) - Math.abs(a - 0.5));
    clues.length = options.maxTokens;
  }
  let logSpam = 0;
  let logHam = 0;
  for (const f of clues) {
    logSpam += Math.log(Math.max(f, 1e-200));
    logHam += Math.log(Math.max(1 - f, 1e-200));
  }
  const df = 2 * clues.length;
  const spamness = 1 - _chi2Q(-2 * logHam, df); // ham-like evidence rejected: spam
  const hamness = 1 - _chi2Q(-2 * logSpam, df); // spam-like evidence rejected: not spam
  return Math.min(1, Math.max(0, (1 + spamness - hamness) / 2));
}

/** How {@linkcode prune} bounds the model. */
export interface PruneOptions {
  /** At most this many token rows are kept. */
  readonly maxTokens: number;
  /** Rows not taught since before this day (days since the epoch) are removed first, all. */
  readonly olderThanDay: number;
}

/**
 * Bounds the model: removes every row last taught before `olderThanDay`, then, while more than
 * `maxTokens` remain, the rarest (fewest examples), the oldest first among equals. The totals
 * stay (they count examples, not tokens). Returns how many rows were removed.
 */
export function prune(model: Model, options: PruneOptions): number {
  const rows = [...model.tokens.entries()];
  const old = rows.filter(([, row]) => row.seen < options.olderThanDay);
  const kept = rows.filter(([, row]) => row.seen >= options.olderThanDay);
  const excess = Math.max(0, kept.length - Math.max(0, options.maxTokens));
  const doomed = old.map(([token]) => token);
  if (excess > 0) {
    kept.sort(([ta, a], [tb, b]) =>
      (a.spam + a.ham) - (b.spam + b.ham) || a.seen - b.seen || (ta < tb ? -1 : ta > tb ? 1 : 0)
    );
    doomed.push(...kept.slice(0, excess).map(([token]) => token));
  }
  for (const token of doomed) model.tokens.delete(token);
  return doomed.length;
}
