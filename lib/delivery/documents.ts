/**
 * The files of submissions to the chat, after their notification: each file waiting in the store
 * (`files`, lib/storage/attachments.ts) whose notification reached the chat (the chat ledger
 * knows its first message) goes as a document replying to it, in the same chat and topic,
 * captioned with the submission's id, through the delivery queue's pacing (`call`, the `later`
 * lane: behind waiting senders). Sent, it is noted in the store and as a part of its entry in the
 * ledger (so erasure and retention delete it from the chat like the text); a file whose
 * notification was given up (past `DELIVERY_MAX_AGE`, no longer in the outbox) is given up with
 * it; refused by Telegram (too large, a type it rejects), a line in the chat says so and the file
 * stays on the server; any other failure is tried again later, with back-off, across restarts (at
 * least once).
 *
 * @module
 */
import type { BotApiResult } from "../bot/api.ts";
import { messageIdOf } from "../bot/api.ts";
import type { DocumentExtra } from "../bot/document.ts";
import { retryDelayMs } from "../common/retry_schedule.ts";
import { describeError, type Logger } from "../log/logger.ts";
import type { FileState } from "../storage/attachments.ts";
import type { LedgerEntry, SentPart } from "../storage/ledger.ts";
import type { Store } from "../storage/store.ts";
import type { PacedCall } from "./queue.ts";

/** How often the store is looked at for files waiting, in milliseconds (and after each wake). */
export const DOCUMENTS_POLL_MS = 5000;

/** At most this many waiting files are looked at in one round. */
export const DOCUMENTS_BATCH = 50;

/** What a {@linkcode DocumentSender} works with. */
export interface DocumentDeps {
  readonly store: Pick<Store, "run">;
  /** The chat ledger: where a notification went; sent files become parts of its entry. */
  readonly ledger: {
    get(id: string): LedgerEntry | undefined;
    noteSent(part: SentPart): Promise<void>;
  };
  /** The delivery queue's paced call (`DeliveryQueue.call`). */
  readonly call: (chat: number, fn: PacedCall, lane: "later") => Promise<BotApiResult>;
  /** One `sendDocument` of `file` (lib/bot/document.ts, its bytes read from the spool). */
  readonly sendFile: (file: FileState, chat: number, extra: DocumentExtra) => Promise<BotApiResult>;
  /** One `sendMessage` (the line saying a file was refused). */
  readonly say: (chat: number, text: string, extra: DocumentExtra) => Promise<BotApiResult>;
  /** The forum topic of a form's notifications in `chat` (`null`: the default form). */
  readonly topicOf: (form: string | null, chat: number) => number | undefined;
  /** Ids `contactd forget` erased while the service runs: never sent. */
  readonly forgotten?: { has(id: string): boolean };
  /** A file whose notification has not reached the chat after this long is given up. */
  readonly maxAgeMs: number;
  /** The wall clock (ms since the epoch), a monotonic clock, and timers. */
  readonly wallNow: () => number;
  readonly now: () => number;
  readonly setTimer: (fn: () => void, ms: number) => unknown;
  readonly clearTimer: (handle: unknown) => void;
  readonly random: () => number;
  readonly log: Logger;
}

/** The line the chat gets for a file Telegram refused. */
export function refusedLine(file: FileState, error: string): string {
  return `📎 ${file.name} (#${file.submission}) could not be sent: Telegram answered "${error}". ` +
    "It is kept on the server: contactd export --files DIR copies it out.";
}

/** Whether Telegram refused the file itself (too large, a type or content it rejects). */
export function isRefusal(result: BotApiResult & { ok: false }): boolean {
  return result.errorCode === 413 ||
    (result.errorCode === 400 && !/chat not found|thread not found/i.test(result.error));
}

/** Sends the files waiting, one round at a time, until closed. */
export class DocumentSender {
  readonly #deps: DocumentDeps;
  /** When each file that failed may be tried again (monotonic ms), by `submission:idx`. */
  readonly #retryAt = new Map<string, number>();
  /** The files waiting at the last look, less those settled since. */
  #waiting: FileState[] = [];
  #timer: unknown;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;

  constructor(deps: DocumentDeps) {
    this.#deps = deps;
  }

  /** Starts the rounds (the first at once). */
  start(): void {
    this.wake();
  }

  /** A round now (a notification just reached the chat), or right after the one running. */
  wake(): void {
    if (this.#closed) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#deps.clearTimer(this.#timer);
    this.#running = this.round().then(() => {}, (error) => {
      this.#deps.log("error", { event: "documents_failed", error: describeError(error) });
    }).finally(() => {
      this.#running = undefined;
      if (this.#closed) return;
      if (this.#again) {
        this.#again = false;
        return this.wake();
      }
      this.#timer = this.#deps.setTimer(() => this.wake(), DOCUMENTS_POLL_MS);
    });
  }

  /** Stops after the file in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#deps.clearTimer(this.#timer);
    await this.#running;
  }

  /**
   * The files waiting for the chat as of the last round (at most {@linkcode DOCUMENTS_BATCH},
   * at most {@linkcode DOCUMENTS_POLL_MS} old), for `/status` and `/pending`.
   */
  waiting(): readonly FileState[] {
    return this.#waiting;
  }

  /** One round: each waiting file whose time has come, in order. Returns how many settled. */
  async round(): Promise<number> {
    const { store } = this.#deps;
    let settled = 0;
    this.#waiting = await store.run("files.waiting", { limit: DOCUMENTS_BATCH });
    for (const file of this.#waiting) {
      if (this.#closed) break;
      const key = `${file.submission}:${file.idx}`;
      if ((this.#retryAt.get(key) ?? 0) > this.#deps.now()) continue;
      if (await this.#one(file, key)) settled++;
    }
    return settled;
  }

  /** One file: sent, refused, given up, or left for later. True once it is settled. */
  async #one(file: FileState, key: string): Promise<boolean> {
    const { store, ledger, log } = this.#deps;
    if (this.#deps.forgotten?.has(file.submission) === true) return false;
    const entry = ledger.get(file.submission);
    const replyTo = entry?.buttons[0] ?? entry?.messages[0];
    if (entry === undefined || replyTo === undefined) {
      // Its notification has not reached the chat (yet): given up with it, past DELIVERY_MAX_AGE
      // and out of the outbox. One still there may yet be sent, however old: a held submission
      // released from `/held` long after it came (its files wait for the chat from then on).
      if (this.#deps.wallNow() - Date.parse(file.ts) <= this.#deps.maxAgeMs) return false;
      if (await store.run("outbox.read", { id: file.submission }) !== undefined) return false;
      await this.#settle(file, "refused", null, null, "given up: its notification was not sent");
      log("warn", { event: "file_given_up", id: file.submission, index: file.idx });
      return true;
    }
    const { chat } = entry;
    const extra: DocumentExtra = {
      topicId: this.#deps.topicOf(file.form, chat),
      replyTo,
      caption: `#${file.submission}`,
      ...(file.silent === true ? { silent: true } : {}),
    };
    const result = await this.#deps.call(
      chat,
      () => this.#deps.sendFile(file, chat, extra),
      "later",
    );
    if (result.ok) {
      const message = messageIdOf(result) ?? null;
      await this.#settle(file, "sent", chat, message, null);
      if (message !== null) await ledger.noteSent(_partOf(entry, message));
      log("info", { event: "file_sent", id: file.submission, index: file.idx, size: file.size });
      return true;
    }
    if (isRefusal(result)) {
      await this.#settle(file, "refused", chat, null, result.error);
      log("warn", {
        event: "file_refused",
        id: file.submission,
        index: file.idx,
        error: result.error,
      });
      const said = await this.#deps.call(
        chat,
        () => this.#deps.say(chat, refusedLine(file, result.error), extra),
        "later",
      );
      const saidId = messageIdOf(said);
      if (saidId !== undefined) await ledger.noteSent(_partOf(entry, saidId));
      return true;
    }
    await store.run("files.failed", {
      submission: file.submission,
      idx: file.idx,
      error: result.error,
    });
    this.#retryAt.set(key, this.#deps.now() + retryDelayMs(file.attempts + 1, this.#deps.random));
    log("warn", {
      event: "file_send_failed",
      id: file.submission,
      index: file.idx,
      error: result.error,
    });
    return false;
  }

  async #settle(
    file: FileState,
    state: "sent" | "refused",
    chat: number | null,
    message: number | null,
    error: string | null,
  ): Promise<void> {
    this.#retryAt.delete(`${file.submission}:${file.idx}`);
    this.#waiting = this.#waiting.filter((other) => other !== file);
    await this.#deps.store.run("files.settled", {
      submission: file.submission,
      idx: file.idx,
      state,
      chat,
      message,
      error,
    });
  }
}

/** A file's message as a part of its submission's entry (not a first part: no buttons). */
function _partOf(entry: LedgerEntry, messageId: number): SentPart {
  return {
    id: entry.id,
    ts: entry.ts,
    chat: entry.chat,
    messageId,
    first: false,
    ...(entry.form === undefined ? {} : { form: entry.form }),
    ip: entry.ip,
    contact: entry.contact,
  };
}
