/**
 * `contactd forget` while the service runs. Only the service may touch its files (it holds
 * `MESSAGES_FILE.lock`), so the command asks it: it writes a request file beside the backup file
 * (`MESSAGES_FILE.forget`, created exclusively, mode 0644 and never chowned: one request at a
 * time), the service looks for one every {@linkcode FORGET_POLL_MS} (a regular file of at most
 * {@linkcode FORGET_REQUEST_MAX_BYTES}), performs the erasure (lib/storage/erasure.ts: the
 * chat ledger's entries included, their messages handed to the bot to delete from the chat)
 * and writes its answer (`MESSAGES_FILE.forget.answer`), which the command reads, removes, and
 * prints. Both files are the service's own, so the command needs no permission beyond them.
 *
 * @module
 */
import { forgetAnswerPath, forgetRequestPath } from "../common/state_files.ts";
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
import { readAllText, removeIfPresent, type StorageFs, writeAll } from "./file_system.ts";

/** How often a running service looks for a request. */
export const FORGET_POLL_MS = 1000;

/** A request's mode: readable by the service's user when forget runs as root; never chowned. */
export const REQUEST_MODE = 0o644;

/** How long `forget` waits for a running service's answer. */
export const FORGET_ANSWER_WAIT_MS = 30_000;

/** A request: what to forget, whether only to count, and a nonce its answer repeats. */
export interface ForgetRequest {
  readonly nonce: string;
  readonly match: ForgetMatch;
  readonly dryRun: boolean;
}

/** The service's answer: what it removed, or why it could not. */
export type ForgetAnswer =
  & { readonly nonce: string }
  & ({ readonly ok: true; readonly outcome: ErasureOutcome } | {
    readonly ok: false;
    readonly error: string;
  });

/** A request as its file holds it. */
export function encodeRequest(request: ForgetRequest): string {
  const { nonce, match, dryRun } = request;
  return JSON.stringify({ nonce, by: match.by, value: match.value, dry_run: dryRun }) + "\n";
}

/** The request in a file's text, or why it is not one. */
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
  return { nonce: value.nonce, match, dryRun: value.dry_run };
}

/** An answer as its file holds it (the outcome's counts as keys beside `nonce` and `ok`). */
export function encodeAnswer(answer: ForgetAnswer): string {
  return JSON.stringify(
    answer.ok
      ? { nonce: answer.nonce, ok: true, ...answer.outcome }
      : { nonce: answer.nonce, ok: false, error: answer.error },
  ) + "\n";
}

/** The answer in a file's text, `undefined` while it is not a whole one. */
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

/** Writes `text` to a new file at `path` (created exclusively, never followed), synced. */
async function _writeNew(fs: StorageFs, path: string, text: string, mode = 0o600): Promise<void> {
  const file = await fs.open(path, { write: true, createNew: true, mode });
  try {
    if (mode !== 0o600 && (((await file.stat()).mode ?? 0o444) & 0o004) === 0) {
      await removeIfPresent(fs, path);
      throw new Deno.errors.PermissionDenied(
        `${path} was created unreadable to others (umask stricter than 022?): run forget with ` +
          "umask 022",
      );
    }
    await writeAll(file, new TextEncoder().encode(text));
    await file.syncData();
  } finally {
    file.close();
  }
}

/** The largest request file the service reads (a request is one short line). */
export const FORGET_REQUEST_MAX_BYTES = 64 * 1024;

/** At most `max` bytes of the file at `path` as text; rejects when it holds more. */
async function _readBounded(fs: StorageFs, path: string, max: number): Promise<string> {
  const file = await fs.open(path, { read: true });
  try {
    const buffer = new Uint8Array(max + 1);
    let size = 0;
    while (size <= max) {
      const n = await file.read(buffer.subarray(size));
      if (n === null) break;
      size += n;
    }
    if (size > max) throw new Deno.errors.InvalidData(`${path} holds more than ${max} bytes`);
    return new TextDecoder().decode(buffer.subarray(0, size));
  } finally {
    file.close();
  }
}

/**
 * What the service answers requests with: the erasure's (its optional `ledger`, the chat
 * ledger, and `onChatDeletions`, told the messages to delete from the chat, included).
 */
export interface ForgetServiceDeps extends ErasureDeps {
  /** `MESSAGES_FILE`, beside which the request and the answer are. */
  readonly messagesFile: string;
}

/**
 * The service's side: performs the request waiting beside `MESSAGES_FILE`, if there is one, and
 * answers it. Logs `forget` (the counts only, never what was matched), `forget_failed`, or
 * `forget_request_invalid`; never rejects (a failure to answer is logged, `forget_answer_failed`,
 * and the command says it got no answer).
 */
export async function serveForgetRequest(deps: ForgetServiceDeps): Promise<void> {
  const { fs, log, messagesFile } = deps;
  const requestFile = forgetRequestPath(messagesFile);
  let text: string;
  try {
    // A FIFO would hold the read (and the stop) forever, a huge file the memory: refused first.
    const named = await fs.lstat(requestFile);
    if (!named.isFile || named.isSymlink || named.size > FORGET_REQUEST_MAX_BYTES) {
      throw new Deno.errors.InvalidData(
        `${requestFile} is not a regular file of at most ${FORGET_REQUEST_MAX_BYTES} bytes`,
      );
    }
    text = await _readBounded(fs, requestFile, FORGET_REQUEST_MAX_BYTES);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    log("error", { event: "forget_request_unreadable", error: describeError(error) });
    // Taken away, so it is not reported again every poll: the command says it got no answer.
    await removeIfPresent(fs, requestFile).catch((cleanup) =>
      log("error", { event: "forget_request_unreadable", error: describeError(cleanup) })
    );
    return;
  }
  // Still being written (a request ends with its line break): looked at again at the next poll.
  if (!text.endsWith("\n")) return;
  const request = parseRequest(text);
  let answer: ForgetAnswer;
  if ("error" in request) {
    log("warn", { event: "forget_request_invalid", reason: request.error });
    const nonce = (/"nonce":"([^"\\]{1,64})"/.exec(text) ?? [])[1] ?? "";
    answer = { nonce, ok: false, error: `invalid request: ${request.error}` };
  } else {
    try {
      const outcome = await erase(deps, request.match, request.dryRun);
      log("info", {
        event: "forget",
        by: request.match.by,
        dry_run: request.dryRun,
        ...outcomeFields(outcome),
      });
      answer = { nonce: request.nonce, ok: true, outcome };
    } catch (error) {
      log("error", { event: "forget_failed", error: describeError(error) });
      answer = { nonce: request.nonce, ok: false, error: describeError(error) };
    }
  }
  try {
    const answerFile = forgetAnswerPath(messagesFile);
    await removeIfPresent(fs, answerFile);
    await _writeNew(fs, answerFile, encodeAnswer(answer));
    await removeIfPresent(fs, requestFile);
  } catch (error) {
    log("error", { event: "forget_answer_failed", error: describeError(error) });
  }
}

/** What the command's side needs. */
export interface ForgetAskDeps {
  readonly fs: StorageFs;
  readonly messagesFile: string;
  /** Waits `ms` (the command's own timer). */
  readonly sleep: (ms: number) => Promise<void>;
  /** How long to wait for the answer; default {@linkcode FORGET_ANSWER_WAIT_MS}. */
  readonly waitMs?: number;
}

/** Another request waits already (another `forget` runs, or one was left by a crash). */
export class ForgetRequestPending extends Error {
  override readonly name = "ForgetRequestPending";
}

/**
 * The command's side: leaves `request` for the running service and waits for its answer (read,
 * then removed); `undefined` when none came in time (the request is then taken back, unless the
 * service took it meanwhile). Throws {@linkcode ForgetRequestPending} when a request is there.
 */
export async function askService(
  deps: ForgetAskDeps,
  request: ForgetRequest,
): Promise<ForgetAnswer | undefined> {
  const { fs, messagesFile } = deps;
  const requestFile = forgetRequestPath(messagesFile);
  const answerFile = forgetAnswerPath(messagesFile);
  try {
    // Readable by the service's user, whoever runs forget (the directory is the service's, 0700):
    // never chowned, which would follow a link the directory's owner put there meanwhile.
    await _writeNew(fs, requestFile, encodeRequest(request), REQUEST_MODE);
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) {
      throw new ForgetRequestPending(
        `${requestFile} is there already: another contactd forget is waiting for the service ` +
          "(or one was interrupted: remove the file if no other forget runs)",
      );
    }
    throw error;
  }
  const step = FORGET_POLL_MS / 4;
  for (let waited = 0; waited <= (deps.waitMs ?? FORGET_ANSWER_WAIT_MS); waited += step) {
    await deps.sleep(step);
    let text: string;
    try {
      text = await readAllText(fs, answerFile);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      throw error;
    }
    const answer = parseAnswer(text);
    if (answer === undefined || answer.nonce !== request.nonce) continue;
    await removeIfPresent(fs, answerFile);
    return answer;
  }
  await removeIfPresent(fs, requestFile);
  return undefined;
}
