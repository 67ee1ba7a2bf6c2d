/**
 * `contactd forget` while the service runs. Only the service rewrites the backup file it appends
 * to, so the command asks it: it commits a request to the database (`requests`: what to forget,
 * whether only to count), the service looks for one every {@linkcode FORGET_POLL_MS} (and at
 * start, so one left while it was stopped is done then), performs the erasure
 * (lib/storage/erasure.ts: the chat ledger's entries included, their messages handed to the bot
 * to delete from the chat) and answers in the same row (the counts only), which the command reads,
 * removes, and prints. A request the service was working on when it stopped is done at its
 * next start.
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
import { describeError } from "../log/logger.ts";
import {
  erase,
  type ErasureDeps,
  type ErasureOutcome,
  FORGET_KINDS,
  type ForgetMatch,
  parseForgetMatch,
  sameMatch,
} from "./erasure.ts";
import { searchBackupFromStart } from "./recovery.ts";
import { fileIdentity } from "./file_system.ts";
import type { Store } from "./store.ts";

/** How often a running service looks for a request. */
export const FORGET_POLL_MS = 1000;

/** How long `forget` waits for a running service to take its request. */
export const FORGET_ANSWER_WAIT_MS = 30_000;

/**
 * How long `forget` waits for the answer once the service works on it: an erasure rewrites the
 * backup file, which takes about 10 s a GiB.
 */
export const FORGET_WORK_WAIT_MS = 60 * 60_000;

/** A request: what to forget, whether only to count, and a nonce its answer repeats. */
export interface ForgetRequest {
  readonly nonce: string;
  readonly match: ForgetMatch;
  readonly dryRun: boolean;
  /**
   * What a run of it that a crash interrupted had removed, noted as it went (lib/storage/erasure.ts
   * `noteProgress`: after the outbox's part, right before its rewritten backup file took the old
   * one's place, `file` being that file's `dev:ino`, and before the other files'): counted in the
   * answer of the run again, which finds none of it: its pending submissions (given up before),
   * and its records if the backup file is that file (the rename was done). The submission ids it
   * had found (`ids`) count as found by the run again, so their follow-ups, chat ledger entries
   * and parts of the other files (cases, files, spam lessons, replies) still go; those files'
   * counts are what the run again removed of them. A forget that failed, or that the command
   * was stopped doing, keeps it for the next forget of the same match
   * ({@linkcode FORGET_UNFINISHED}).
   */
  readonly done?: ForgetDone;
}

/**
 * At most this many submission ids are noted of a run ({@linkcode ForgetDone}): 8 characters
 * each, about 1.1 MB in the request's row, written three times per erasure. A forget that finds
 * more (one address's flood) notes how many more (`unnoted`); a run again after a crash logs
 * `forget_ids_unnoted`: their other files' parts may be left (retention removes them in time).
 */
export const FORGET_NOTED_IDS_CAP = 100_000;

/** What an interrupted run of a request removed by then (see {@linkcode ForgetRequest}). */
export interface ForgetDone {
  readonly records: number;
  readonly pending: number;
  readonly file: string;
  /** The submission ids it had found, at most {@linkcode FORGET_NOTED_IDS_CAP}. */
  readonly ids: readonly string[];
  /** How many more ids it had found than `ids` holds, at most (`forget_ids_unnoted`). */
  readonly unnoted: number;
}

/** The `requests` row kind of a forget. */
export const FORGET_REQUEST = "forget";

/**
 * The `requests` row kind of a forget that did not finish (it failed, or the command doing it with
 * the service stopped was stopped): what it names and its note ({@linkcode ForgetDone}), kept
 * until a forget of the same match finishes, which takes the note over first
 * ({@linkcode eraseNoted}).
 */
export const FORGET_UNFINISHED = "forget_unfinished";

/** The service's answer: what it removed, or why it could not. */
export type ForgetAnswer =
  & { readonly nonce: string }
  & ({ readonly ok: true; readonly outcome: ErasureOutcome } | {
    readonly ok: false;
    readonly error: string;
  });

/** A request as its row holds it. */
export function encodeRequest(request: ForgetRequest): string {
  const { nonce, match, dryRun, done } = request;
  return JSON.stringify({
    nonce,
    by: match.by,
    value: match.value,
    dry_run: dryRun,
    ...(done === undefined ? {} : { done }),
  }) + "\n";
}

/** The request in a row's text, or why it is not one. */
export function parseRequest(text: string): ForgetRequest | { readonly error: string } {
  const value = parseJsonText(text);
  if (value === undefined) return { error: "not JSON" };
  if (
    !isRecord(value) || typeof value.nonce !== "string" || typeof value.value !== "string" ||
    typeof value.dry_run !== "boolean" ||
    !(FORGET_KINDS as readonly unknown[]).includes(value.by)
  ) {
    return { error: "not a forget request" };
  }
  const match = parseForgetMatch(value.by as ForgetMatch["by"], value.value);
  if ("error" in match) return match;
  const done = _parseDone(value.done);
  return {
    nonce: value.nonce,
    match,
    dryRun: value.dry_run,
    ...(done === undefined ? {} : { done }),
  };
}

/** A request's `done` note, `undefined` when there is none it can read. */
function _parseDone(done: unknown): ForgetDone | undefined {
  if (
    !isRecord(done) || !Number.isSafeInteger(done.records) ||
    !Number.isSafeInteger(done.pending) || typeof done.file !== "string"
  ) {
    return undefined;
  }
  const ids = Array.isArray(done.ids)
    ? done.ids.filter((id): id is string => typeof id === "string")
    : [];
  return {
    records: done.records as number,
    pending: done.pending as number,
    file: done.file,
    ids: ids.slice(0, FORGET_NOTED_IDS_CAP),
    unnoted: Number.isSafeInteger(done.unnoted) ? done.unnoted as number : 0,
  };
}

/** An answer as its row holds it (the outcome's counts as keys beside `nonce` and `ok`). */
export function encodeAnswer(answer: ForgetAnswer): string {
  return JSON.stringify(
    answer.ok
      ? { nonce: answer.nonce, ok: true, ...answer.outcome }
      : { nonce: answer.nonce, ok: false, error: answer.error },
  ) + "\n";
}

/** The answer in a row's text, `undefined` when it is not one. */
export function parseAnswer(text: string): ForgetAnswer | undefined {
  const value = parseJsonText(text);
  if (!isRecord(value) || typeof value.nonce !== "string") return undefined;
  if (
    value.ok === true && Number.isSafeInteger(value.records) && Number.isSafeInteger(value.pending)
  ) {
    const count = (key: string) => Number.isSafeInteger(value[key]) ? value[key] as number : 0;
    const unsearched = count("unsearched");
    const chat = Number.isSafeInteger(value.chatEntries)
      ? { chatEntries: count("chatEntries"), chatMessages: count("chatMessages") }
      : {};
    const extra = isRecord(value.extra)
      ? Object.fromEntries(
        Object.entries(value.extra).filter(([, n]) => Number.isSafeInteger(n)),
      ) as Record<string, number>
      : undefined;
    return {
      nonce: value.nonce,
      ok: true,
      outcome: {
        records: value.records as number,
        pending: value.pending as number,
        ...(unsearched > 0 ? { unsearched } : {}),
        ...chat,
        ...(extra === undefined ? {} : { extra }),
      },
    };
  }
  return value.ok === false && typeof value.error === "string"
    ? { nonce: value.nonce, ok: false, error: value.error }
    : undefined;
}

/** An outcome's counts as log fields: each other file's count under its own name. */
export function outcomeFields(
  outcome: ErasureOutcome,
): Record<string, number | undefined> {
  const { extra, ...counts } = outcome;
  return { ...counts, ...extra };
}

/**
 * What the service answers requests with: the erasure's (its optional `ledger`, the chat
 * ledger, and `onChatDeletions`, told the messages to delete from the chat, included).
 */
export interface ForgetServiceDeps extends ErasureDeps {
  /** The database the requests are in. */
  readonly store: Pick<Store, "run" | "checkpoint">;
}

/**
 * The service's side: performs the oldest request waiting, if there is one, and answers it. Logs
 * `forget` (the counts only, never what was matched), `forget_failed`, or
 * `forget_request_invalid`; rejects only when the database cannot be read or written (then the
 * request stays, and is tried again at the next poll).
 */
export async function serveForgetRequest(deps: ForgetServiceDeps): Promise<void> {
  const { store, log } = deps;
  const row = await store.run("requests.next", { kind: FORGET_REQUEST });
  if (row === undefined) return;
  const request = parseRequest(row.body);
  let answer: ForgetAnswer;
  if ("error" in request) {
    log("warn", { event: "forget_request_invalid", reason: request.error });
    const nonce = (/"nonce":"([^"\\]{1,64})"/.exec(row.body) ?? [])[1] ?? "";
    answer = { nonce, ok: false, error: `invalid request: ${request.error}` };
  } else {
    try {
      const outcome = await eraseNoted(deps, row.seq, request);
      log("info", {
        event: "forget",
        by: request.match.by,
        dry_run: request.dryRun,
        ...outcomeFields(outcome),
      });
      answer = { nonce: request.nonce, ok: true, outcome };
      if (!request.dryRun && outcome.records > 0) await searchBackupFromStart(store);
    } catch (error) {
      log("error", { event: "forget_failed", error: describeError(error) });
      answer = { nonce: request.nonce, ok: false, error: describeError(error) };
    }
  }
  await store.run("requests.answer", {
    seq: row.seq,
    state: answer.ok ? "done" : "failed",
    answer: encodeAnswer(answer),
  });
  // The request named what to erase: its old page goes from the file and its log too.
  await store.checkpoint().catch((error) =>
    log("error", { event: "database_checkpoint_failed", error: describeError(error) })
  );
}

/**
 * The erasure `request` (row `seq`) asks for, what it removed and the ids it found noted in its
 * row as it goes (lib/storage/erasure.ts `noteProgress`); its outcome counts what an earlier run
 * had removed, which this one cannot find any more, and the ids that run found count as found
 * (the other files' counts are what this run removed of them). That earlier run is the one a
 * crash interrupted (`request.done`), else the latest unfinished forget of the same match
 * ({@linkcode FORGET_UNFINISHED}: one that failed, or that the command was stopped doing), whose
 * note this one takes over. When the erasure fails, its note is kept as such a row (`seq` is one
 * already when `unfinishedRow`); once it finishes, every such row of its match goes.
 */
export async function eraseNoted(
  deps: ForgetServiceDeps,
  seq: number,
  request: ForgetRequest,
  unfinishedRow = false,
): Promise<ErasureOutcome> {
  const { store } = deps;
  const unfinished = request.dryRun ? [] : await _unfinished(store, request.match);
  const from = request.done ?? unfinished.findLast((row) => row.seq !== seq && row.done)?.done;
  const earlier = await _earlier(deps, from);
  if (earlier.unnoted > 0) {
    deps.log("warn", { event: "forget_ids_unnoted", count: earlier.unnoted });
  }
  let noted = from;
  let outcome: ErasureOutcome;
  try {
    outcome = await erase(
      {
        ...deps,
        found: earlier.ids,
        noteProgress: (progress) => {
          // `progress.ids` holds `earlier.ids` (found): those beyond the cap are counted only.
          const ids = [...progress.ids].slice(0, FORGET_NOTED_IDS_CAP);
          const done: ForgetDone = {
            records: earlier.records + progress.records,
            pending: earlier.pending + progress.pending,
            // No rename yet: the backup file is still the one `earlier.records` (if any) were of.
            file: progress.file !== "" || earlier.records === 0 ? progress.file : from?.file ?? "",
            ids,
            unnoted: earlier.unnoted + progress.ids.size - ids.length,
          };
          noted = done;
          return store.run("requests.progress", { seq, body: encodeRequest({ ...request, done }) });
        },
      },
      request.match,
      request.dryRun,
    );
  } catch (error) {
    if (!unfinishedRow && noted !== undefined) {
      await store.run("requests.add", {
        kind: FORGET_UNFINISHED,
        body: encodeRequest({ ...request, done: noted }),
        created: new Date(deps.now()).toISOString(),
        state: "failed",
      });
    }
    throw error;
  }
  for (const row of unfinished) await store.run("requests.remove", { seq: row.seq });
  return {
    ...outcome,
    records: outcome.records + earlier.records,
    pending: outcome.pending + earlier.pending,
  };
}

/** The unfinished forgets of `match` ({@linkcode FORGET_UNFINISHED}), oldest first. */
async function _unfinished(
  store: ForgetServiceDeps["store"],
  match: ForgetMatch,
): Promise<{ seq: number; done: ForgetDone | undefined }[]> {
  const rows = await store.run("requests.list", { kind: FORGET_UNFINISHED });
  return rows.flatMap((row) => {
    const request = parseRequest(row.body);
    return "error" in request || !sameMatch(request.match, match)
      ? []
      : [{ seq: row.seq, done: request.done }];
  });
}

/**
 * What an interrupted run removed: the pending submissions it gave up (committed before its
 * note), and its records if the backup file is the one it renamed into place (else the rename
 * never came, and this run removes them again); and the ids it found, and how many it could not
 * note.
 */
async function _earlier(
  deps: Pick<ForgetServiceDeps, "fs" | "path">,
  done: ForgetDone | undefined,
): Promise<
  { records: number; pending: number; ids: readonly string[]; unnoted: number }
> {
  if (done === undefined) return { records: 0, pending: 0, ids: [], unnoted: 0 };
  let renamed = false;
  try {
    renamed = done.file !== "" && fileIdentity(await deps.fs.lstat(deps.path)) === done.file;
  } catch {
    // No backup file: that run's is gone, and what it removed cannot be told.
  }
  const { pending, ids, unnoted } = done;
  return { records: renamed ? done.records : 0, pending, ids, unnoted };
}

/** What the command's side needs. */
export interface ForgetAskDeps {
  readonly store: Pick<Store, "run">;
  /** Waits `ms` (the command's own timer). */
  readonly sleep: (ms: number) => Promise<void>;
  /** Now, for the request's time. */
  readonly now: () => Date;
  /** How long to wait for the answer; default {@linkcode FORGET_ANSWER_WAIT_MS}. */
  readonly waitMs?: number;
}

/**
 * The command's side: commits `request` for the running service and waits for its answer (read,
 * then removed); `undefined` when none came in time (the request is then taken back, unless the
 * service took it meanwhile: it is done then, and `forget --dry-run` shows what is left).
 */
export async function askService(
  deps: ForgetAskDeps,
  request: ForgetRequest,
): Promise<ForgetAnswer | undefined> {
  const { store } = deps;
  const seq = await store.run("requests.add", {
    kind: FORGET_REQUEST,
    body: encodeRequest(request),
    created: deps.now().toISOString(),
  });
  const step = FORGET_POLL_MS / 4;
  const takeBy = deps.waitMs ?? FORGET_ANSWER_WAIT_MS;
  for (let waited = 0; waited <= takeBy + FORGET_WORK_WAIT_MS; waited += step) {
    await deps.sleep(step);
    const state = await store.run("requests.get", { seq });
    if (state === undefined) return undefined;
    if (state.state === "waiting" && waited >= takeBy) break;
    if (state.state === "waiting" || state.state === "working" || state.answer === null) continue;
    await store.run("requests.remove", { seq });
    const answer = parseAnswer(state.answer);
    if (answer !== undefined && answer.nonce === request.nonce) return answer;
    return { nonce: request.nonce, ok: false, error: "the service's answer could not be read" };
  }
  // Not taken in time (the service is stopping, or busy): taken back, unless it was taken now.
  const state = await store.run("requests.get", { seq });
  if (state?.state === "waiting") await store.run("requests.remove", { seq });
  return undefined;
}
