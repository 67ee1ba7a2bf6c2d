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
   * What a run of it that a crash interrupted had removed, noted right before its rewritten
   * backup file took the old one's place (`file`: that file's `dev:ino`): counted in the answer
   * of the run again, which finds none of it: its pending submissions (given up before), and its
   * records if the backup file is that file (the rename was done).
   */
  readonly done?: ForgetDone;
}

/** What an interrupted run of a request removed by its rename (see {@linkcode ForgetRequest}). */
export interface ForgetDone {
  readonly records: number;
  readonly pending: number;
  readonly file: string;
}

/** The `requests` row kind of a forget. */
export const FORGET_REQUEST = "forget";

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
  const done = value.done;
  const noted = isRecord(done) && Number.isSafeInteger(done.records) &&
    Number.isSafeInteger(done.pending) && typeof done.file === "string";
  return {
    nonce: value.nonce,
    match,
    dryRun: value.dry_run,
    ...(noted ? { done: done as unknown as ForgetDone } : {}),
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
      const outcome = await _eraseNoted(deps, row.seq, request);
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
 * The erasure `request` (row `seq`) asks for, what it removed noted in its row right before its
 * backup file's rename; its outcome counts what an earlier run a crash interrupted had removed
 * (`request.done`), which this one cannot find any more.
 */
async function _eraseNoted(
  deps: ForgetServiceDeps,
  seq: number,
  request: ForgetRequest,
): Promise<ErasureOutcome> {
  const earlier = await _earlier(deps, request.done);
  const outcome = await erase(
    {
      ...deps,
      beforeRename: (removed, file) =>
        deps.store.run("requests.progress", {
          seq,
          body: encodeRequest({
            ...request,
            done: {
              records: earlier.records + removed.records,
              pending: earlier.pending + removed.pending,
              file,
            },
          }),
        }),
    },
    request.match,
    request.dryRun,
  );
  return {
    ...outcome,
    records: outcome.records + earlier.records,
    pending: outcome.pending + earlier.pending,
  };
}

/**
 * What an interrupted run removed: the pending submissions it gave up (committed before its
 * note), and its records if the backup file is the one it renamed into place (else the rename
 * never came, and this run removes them again).
 */
async function _earlier(
  deps: Pick<ForgetServiceDeps, "fs" | "path">,
  done: ForgetDone | undefined,
): Promise<{ records: number; pending: number }> {
  if (done === undefined) return { records: 0, pending: 0 };
  let renamed = false;
  try {
    renamed = done.file !== "" && fileIdentity(await deps.fs.lstat(deps.path)) === done.file;
  } catch {
    // No backup file: that run's is gone, and what it removed cannot be told.
  }
  return { records: renamed ? done.records : 0, pending: done.pending };
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
