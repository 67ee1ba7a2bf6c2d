/**
 * The replies file (`MESSAGES_FILE.replies`): every reply the owner sent from the chat, on disk
 * before it is mailed, and afterwards its audit. Whole JSON lines, 0600, never written through a
 * symbolic link; a last line without its line break (a crash mid-write) is logged, read when it
 * is whole JSON and skipped when not, and ended by the rewrite at open.
 *
 * Lines: `add` (the reply with what its mail needs: recipient, subject, text, quoted message),
 * `failed` (a try that failed: when, why), `done` (`sent` or `given_up`: when, why), and `audit`
 * (a done reply as kept: its time, submission id, masked recipient, outcome, tries; never its
 * text). The file is rewritten (through `<path>.tmp`, synced, renamed) at open and after each
 * `done`, so a reply's text and address stay on disk only while it waits: the file is the audit
 * of replies, not a copy of them. Audits older than `RETENTION` are dropped at open and by
 * {@linkcode ReplyStore.prune}; {@linkcode ReplyStore.forget} drops a submission's replies.
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { serial } from "../common/serial.ts";
import { describeError, type Logger } from "../log/logger.ts";
import {
  openNoFollow,
  readTextIfPresent,
  replaceFile,
  type StorageFile,
  type StorageFs,
  writeAll,
} from "../storage/file_system.ts";
import type { ReplyDraft } from "./message.ts";
import { maskAddress } from "./recipient.ts";

/** A reply as accepted from the chat. */
export interface NewReply {
  /** The reply's own id. */
  readonly id: string;
  /** The submission it answers. */
  readonly submission: string;
  /** When it was accepted (`formatTimestamp`). */
  readonly ts: string;
  /** The chat it was written in, and the owner's message (the outcome answers it). */
  readonly chat: number;
  readonly message: number;
  /** The forum topic, when the chat has topics. */
  readonly topic?: number | undefined;
  /** The mail to send. */
  readonly draft: ReplyDraft;
}

/** A reply waiting to be sent. */
export interface PendingReply extends NewReply {
  /** Failed tries so far. */
  readonly attempts: number;
  /** The last failure's reason, when there was one. */
  readonly lastError?: string | undefined;
}

/** How a reply ended. */
export type ReplyResult = "sent" | "given_up";

/** What the file keeps of a done reply: never its text nor its full address. */
export interface ReplyAudit {
  readonly id: string;
  readonly submission: string;
  /** When it was accepted. */
  readonly ts: string;
  /** The recipient, masked (`c•••@example.org`). */
  readonly to: string;
  readonly result: ReplyResult;
  /** When it was sent or given up. */
  readonly done: string;
  readonly attempts: number;
  /** Why it was given up. */
  readonly reason?: string | undefined;
}

/** The replies file, open; its writes run one at a time, in call order. */
export interface ReplyStore {
  /**
   * Records an accepted reply, synced; resolves once it is on disk (then it may be sent), to
   * true, or to false when a reply with this id is already known (waiting or done): a redelivered
   * chat update is not mailed twice when its id is derived from the chat's message (e.g.
   * `<chat>:<message id>`).
   */
  add(reply: NewReply): Promise<boolean>;
  /** Records a failed try of reply `id`. */
  failed(id: string, ts: string, error: string): Promise<void>;
  /** Records that reply `id` was sent or given up, then rewrites the file without its text. */
  done(id: string, ts: string, result: ReplyResult, reason?: string): Promise<void>;
  /** The replies waiting, oldest first. */
  pending(): PendingReply[];
  /** The done replies' audits, oldest first. */
  audits(): ReplyAudit[];
  /** Drops audits of replies done before `beforeTs` (retention); resolves to how many. */
  prune(beforeTs: string): Promise<number>;
  /** Drops every reply (waiting or done) to these submissions (erasure); resolves to how many. */
  forget(submissionIds: ReadonlySet<string>): Promise<number>;
  /** Closes the file once the writes under way are done. */
  close(): Promise<void>;
}

/** What {@linkcode openReplyStore} needs. */
export interface ReplyStoreOptions {
  readonly fs: StorageFs;
  /** `repliesPath(MESSAGES_FILE)` (lib/common/state_files.ts). */
  readonly path: string;
  readonly log: Logger;
  /** The wall clock, for retention at open. */
  readonly now: () => Date;
  /** `RETENTION` in ms: audits done longer ago are dropped at open; unset keeps them. */
  readonly retentionMs?: number | undefined;
}

/** What the replies file says, read back. */
export interface RepliesRead {
  readonly pending: PendingReply[];
  readonly audits: ReplyAudit[];
  /** Lines skipped as damaged (a torn last line included). */
  readonly skipped: number;
  /** Whether the last line has no line break (torn by a crash; read if it is whole JSON). */
  readonly torn: boolean;
  /** Done replies whose `add` (with the text) is still in the file. */
  readonly doneWithText: number;
  /** Lines in the file. */
  readonly lines: number;
}

/**
 * Reads the replies file at `path` without writing it (`contactd pending`); a missing file is
 * empty.
 */
export async function readReplies(fs: StorageFs, path: string): Promise<RepliesRead> {
  return parseReplies(await readTextIfPresent(fs, path) ?? "");
}

/** The replies file's text read back (pure); see {@linkcode RepliesRead}. */
export function parseReplies(text: string): RepliesRead {
  const lines = text.split("\n");
  const last = lines.pop() ?? "";
  let skipped = 0;
  let torn = false;
  const adds = new Map<string, PendingReply>();
  const audits = new Map<string, ReplyAudit>();
  let doneWithText = 0;
  const all = last === "" ? lines : [...lines, last];
  all.forEach((line, index) => {
    if (line === "") return;
    const record = _parseLine(line);
    // A last line without its line break is torn, whole JSON or not (the next rewrite ends it).
    if (index === all.length - 1 && last !== "") torn = true;
    if (record === undefined) {
      skipped++;
      return;
    }
    switch (record.op) {
      case "add":
        adds.set(record.reply.id, record.reply);
        break;
      case "failed": {
        const reply = adds.get(record.id);
        if (reply !== undefined) {
          adds.set(record.id, { ...reply, attempts: reply.attempts + 1, lastError: record.error });
        }
        break;
      }
      case "done": {
        const reply = adds.get(record.id);
        if (reply === undefined) break;
        adds.delete(record.id);
        doneWithText++;
        audits.set(record.id, _auditOf(reply, record.ts, record.result, record.reason));
        break;
      }
      case "audit":
        audits.set(record.audit.id, record.audit);
        break;
    }
  });
  const byTs = <T extends { ts: string }>(a: T, b: T) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0);
  return {
    pending: [...adds.values()].sort(byTs),
    audits: [...audits.values()].sort(byTs),
    skipped,
    torn,
    doneWithText,
    lines: all.filter((line) => line !== "").length,
  };
}

/**
 * Opens the replies file at `options.path` (created 0600 when missing): reads it, logs damaged
 * lines (`replies_lines_skipped`), drops audits older than `retentionMs`, and rewrites it when
 * anything was dropped or folded (a torn line, a done reply's text). Rejects when the file
 * cannot be read or that rewrite fails (the service must not start over a file it cannot keep).
 */
export async function openReplyStore(options: ReplyStoreOptions): Promise<ReplyStore> {
  const { fs, path, log } = options;
  const read = await readReplies(fs, path);
  if (read.skipped > 0) {
    log("warn", {
      event: "replies_lines_skipped",
      file: path,
      lines: read.skipped,
      torn: read.torn,
    });
  }
  const pending = new Map(read.pending.map((reply) => [reply.id, reply]));
  let audits = read.audits;
  if (options.retentionMs !== undefined) {
    const before = formatTimestamp(new Date(options.now().getTime() - options.retentionMs));
    audits = audits.filter((audit) => audit.done >= before);
  }
  const auditMap = new Map(audits.map((audit) => [audit.id, audit]));
  const store = new _ReplyStore(fs, path, log, pending, auditMap);
  const folded = read.lines !== read.pending.length + read.audits.length;
  if (read.skipped > 0 || read.torn || folded || audits.length !== read.audits.length) {
    await store.rewrite();
  } else await store.reopen();
  return store;
}

class _ReplyStore implements ReplyStore {
  #file: StorageFile | undefined;
  readonly #serial = serial();
  #closed = false;

  constructor(
    private readonly fs: StorageFs,
    private readonly path: string,
    private readonly log: Logger,
    private readonly waiting: Map<string, PendingReply>,
    private readonly kept: Map<string, ReplyAudit>,
  ) {}

  add(reply: NewReply): Promise<boolean> {
    return this.#queue(async () => {
      if (this.waiting.has(reply.id) || this.kept.has(reply.id)) return false;
      await this.#append(_addLine({ ...reply, attempts: 0 }));
      this.waiting.set(reply.id, { ...reply, attempts: 0 });
      return true;
    });
  }

  failed(id: string, ts: string, error: string): Promise<void> {
    return this.#queue(async () => {
      const reply = this.waiting.get(id);
      if (reply === undefined) return;
      await this.#append({ op: "failed", id, ts, error });
      this.waiting.set(id, { ...reply, attempts: reply.attempts + 1, lastError: error });
    });
  }

  done(id: string, ts: string, result: ReplyResult, reason?: string): Promise<void> {
    return this.#queue(async () => {
      const reply = this.waiting.get(id);
      if (reply === undefined) return;
      await this.#append({
        op: "done",
        id,
        ts,
        result,
        ...(reason === undefined ? {} : { reason }),
      });
      this.waiting.delete(id);
      this.kept.set(id, _auditOf(reply, ts, result, reason));
      // The text goes now; if it cannot, the next open's compaction takes it out.
      try {
        await this.#rewrite();
      } catch (error) {
        this.log("error", {
          event: "replies_compaction_failed",
          file: this.path,
          error: describeError(error),
        });
      }
    });
  }

  pending(): PendingReply[] {
    return [...this.waiting.values()].sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
  }

  audits(): ReplyAudit[] {
    return [...this.kept.values()].sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
  }

  prune(beforeTs: string): Promise<number> {
    return this.#queue(async () => {
      const old = [...this.kept.values()].filter((audit) => audit.done < beforeTs);
      if (old.length === 0) return 0;
      for (const audit of old) this.kept.delete(audit.id);
      await this.#rewrite();
      return old.length;
    });
  }

  forget(submissionIds: ReadonlySet<string>): Promise<number> {
    return this.#queue(async () => {
      let count = 0;
      for (const map of [this.waiting, this.kept] as Map<string, { submission: string }>[]) {
        for (const [id, entry] of map) {
          if (submissionIds.has(entry.submission)) (map.delete(id), count++);
        }
      }
      if (count > 0) await this.#rewrite();
      return count;
    });
  }

  close(): Promise<void> {
    return this.#queue(() => {
      this.#closed = true;
      this.#file?.close();
      this.#file = undefined;
      return Promise.resolve();
    });
  }

  /** Rewrites the file from memory (used by open). */
  rewrite(): Promise<void> {
    return this.#queue(() => this.#rewrite());
  }

  /** Opens the file for appending (used by open). */
  reopen(): Promise<void> {
    return this.#queue(async () => {
      this.#file = await openNoFollow(this.fs, this.path, _APPEND);
    });
  }

  #queue<T>(work: () => Promise<T>): Promise<T> {
    return this.#serial(() => {
      if (this.#closed) throw new Error(`${this.path} is closed`);
      return work();
    });
  }

  async #append(line: Record<string, unknown>): Promise<void> {
    this.#file ??= await openNoFollow(this.fs, this.path, _APPEND);
    await writeAll(this.#file, ENCODER.encode(JSON.stringify(line) + "\n"));
    await this.#file.syncData();
  }

  async #rewrite(): Promise<void> {
    const temporary = `${this.path}.tmp`;
    const lines = [
      ...[...this.kept.values()].map((audit) => ({ op: "audit", ...audit })),
      ...this.pending().map(_addLine),
    ].map((line) => JSON.stringify(line) + "\n").join("");
    this.#file?.close();
    this.#file = undefined;
    // The file's mode kept (0600 for a new one); events replies_cleanup_failed and
    // replies_directory_sync_failed.
    await replaceFile(this.fs, this.path, temporary, lines, this.log, "replies");
    this.#file = await openNoFollow(this.fs, this.path, _APPEND);
  }
}

const ENCODER = new TextEncoder();

const _APPEND = { write: true, append: true, create: true, mode: 0o600 } as const;

/** What the file keeps of `reply` once it was sent or given up at `done`: its audit. */
function _auditOf(
  reply: PendingReply,
  done: string,
  result: ReplyResult,
  reason: string | undefined,
): ReplyAudit {
  return {
    id: reply.id,
    submission: reply.submission,
    ts: reply.ts,
    to: maskAddress(reply.draft.to),
    result,
    done,
    attempts: reply.attempts + (result === "sent" ? 1 : 0),
    ...(reason === undefined ? {} : { reason }),
  };
}

function _addLine(reply: PendingReply): Record<string, unknown> {
  return {
    op: "add",
    id: reply.id,
    submission: reply.submission,
    ts: reply.ts,
    chat: reply.chat,
    message: reply.message,
    ...(reply.topic === undefined ? {} : { topic: reply.topic }),
    to: reply.draft.to,
    subject: reply.draft.subject,
    text: reply.draft.text,
    quoted: { ts: reply.draft.quoted.ts, message: reply.draft.quoted.message },
    ...(reply.attempts === 0 ? {} : { attempts: reply.attempts }),
    ...(reply.lastError === undefined ? {} : { error: reply.lastError }),
  };
}

type _Line =
  | { op: "add"; reply: PendingReply }
  | { op: "failed"; id: string; ts: string; error: string }
  | { op: "done"; id: string; ts: string; result: ReplyResult; reason?: string }
  | { op: "audit"; audit: ReplyAudit };

function _parseLine(line: string): _Line | undefined {
  const value = parseJsonText(line);
  if (!isRecord(value)) return undefined;
  const str = (key: string) => (typeof value[key] === "string" ? value[key] as string : undefined);
  const int = (
    key: string,
  ) => (Number.isSafeInteger(value[key]) ? value[key] as number : undefined);
  const id = str("id");
  const ts = str("ts");
  if (id === undefined || ts === undefined) return undefined;
  const result = str("result");
  const reason = str("reason");
  switch (value.op) {
    case "add": {
      const quoted = value.quoted;
      const [submission, to, subject, text] = [
        str("submission"),
        str("to"),
        str("subject"),
        str("text"),
      ];
      const [chat, message, topic] = [int("chat"), int("message"), value.topic];
      if (
        submission === undefined || to === undefined || subject === undefined ||
        text === undefined || chat === undefined || message === undefined ||
        !isRecord(quoted) || typeof quoted.ts !== "string" || typeof quoted.message !== "string" ||
        (topic !== undefined && !Number.isSafeInteger(topic))
      ) return undefined;
      const error = str("error");
      return {
        op: "add",
        reply: {
          id,
          submission,
          ts,
          chat,
          message,
          ...(topic === undefined ? {} : { topic: topic as number }),
          draft: { to, subject, text, quoted: { ts: quoted.ts, message: quoted.message } },
          attempts: int("attempts") ?? 0,
          ...(error === undefined ? {} : { lastError: error }),
        },
      };
    }
    case "failed": {
      const error = str("error");
      return error === undefined ? undefined : { op: "failed", id, ts, error };
    }
    case "done":
      if (result !== "sent" && result !== "given_up") return undefined;
      return { op: "done", id, ts, result, ...(reason === undefined ? {} : { reason }) };
    case "audit": {
      const [submission, to, done, attempts] = [
        str("submission"),
        str("to"),
        str("done"),
        int("attempts"),
      ];
      if (
        submission === undefined || to === undefined || done === undefined ||
        attempts === undefined || (result !== "sent" && result !== "given_up")
      ) return undefined;
      return {
        op: "audit",
        audit: {
          id,
          submission,
          ts,
          to,
          result,
          done,
          attempts,
          ...(reason === undefined ? {} : { reason }),
        },
      };
    }
    default:
      return undefined;
  }
}
