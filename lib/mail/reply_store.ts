/**
 * The owner's replies by email, in the database (lib/storage/sqlite/replies_sql.ts): every reply
 * accepted from the chat is committed before it is mailed; once sent or given up, only its audit
 * stays (its time, submission id, masked recipient, outcome, tries, reason; never its text nor its
 * address, which go in that same write). Audits go at `RETENTION` ({@linkcode ReplyStore.prune},
 * and at open). Erasure ({@linkcode ReplyStore.forget}) keeps a reply's times but nothing of its
 * sender, so `REPLY_LIMIT` (lib/mail/reply_limit.ts) still counts it: forgetting a submission
 * never frees the owner's budget of outgoing mail.
 *
 * The open store keeps the waiting replies and the audits in memory, so the sender and the reply
 * desk read them synchronously; every change is committed first, then applied to that copy.
 *
 * The replies file of older releases (`MESSAGES_FILE.replies`) is still read here
 * ({@linkcode readReplies}, {@linkcode parseReplies}) for its one-time import; it is never written.
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { serial } from "../common/serial.ts";
import { readTextIfPresent, type StorageFs } from "../storage/file_system.ts";
import { call, type OpArgs, type OpResult, type Store } from "../storage/store.ts";
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

/**
 * What is kept of a done reply: never its text nor its full address. Once its submission was
 * erased, `erased` is true and `submission`, `to` and `reason` are empty: only its times, result
 * and tries stay (counted by `REPLY_LIMIT`) until retention.
 */
export interface ReplyAudit {
  readonly id: string;
  /** `""` once erased. */
  readonly submission: string;
  /** When it was accepted. */
  readonly ts: string;
  /** The recipient, masked (`c•••@example.org`); `""` once erased. */
  readonly to: string;
  readonly result: ReplyResult;
  /** When it was sent or given up. */
  readonly done: string;
  readonly attempts: number;
  /** Why it was given up (`erased`: its submission was erased before it was sent). */
  readonly reason?: string | undefined;
  /** Its submission was erased. */
  readonly erased?: true;
}

/** The replies, open; its writes run one at a time, in call order. */
export interface ReplyStore {
  /**
   * Records an accepted reply, committed; resolves once it is (then it may be sent), to true, or
   * to false when a reply with this id is already known (waiting or done): a redelivered chat
   * update is not mailed twice when its id is derived from the chat's message (e.g.
   * `<chat>:<message id>`).
   */
  add(reply: NewReply): Promise<boolean>;
  /** Records a failed try of reply `id`. */
  failed(id: string, ts: string, error: string): Promise<void>;
  /** Records that reply `id` was sent or given up; its text and address go in the same write. */
  done(id: string, ts: string, result: ReplyResult, reason?: string): Promise<void>;
  /** The replies waiting, oldest first. */
  pending(): PendingReply[];
  /** The done replies' audits (erased ones included), oldest first. */
  audits(): ReplyAudit[];
  /** Drops audits of replies done before `beforeTs` (retention); resolves to how many. */
  prune(beforeTs: string): Promise<number>;
  /**
   * Erases every reply (waiting or done) to these submissions: a waiting one is never sent, and
   * each keeps only its times, result and tries (see {@linkcode ReplyAudit}); resolves to how
   * many. The caller checkpoints the store afterwards (lib/storage/store.ts `checkpoint`).
   */
  forget(submissionIds: ReadonlySet<string>): Promise<number>;
  /** Ends this view once the writes under way are done (the store stays open: its owner's). */
  close(): Promise<void>;
}

/** What {@linkcode openReplyStore} needs besides the store. */
export interface ReplyStoreOptions {
  /** The wall clock: retention at open, and when an erased waiting reply was given up. */
  readonly now: () => Date;
  /** `RETENTION` in ms: audits done longer ago are dropped at open; unset keeps them. */
  readonly retentionMs?: number | undefined;
}

/** What an older release's replies file says, read back (for its import). */
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
 * Reads an older release's replies file at `path` without writing it (the import); a missing
 * file is empty.
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
 * The replies in `store`: drops the audits older than `retentionMs`, then reads the waiting
 * replies and the audits into memory. Rejects when the store does (the service must not start
 * without them).
 */
export async function openReplyStore(
  store: Store,
  options: ReplyStoreOptions,
): Promise<ReplyStore> {
  if (options.retentionMs !== undefined) {
    const before = formatTimestamp(new Date(options.now().getTime() - options.retentionMs));
    await store.run("replies.prune", { before });
  }
  const [rows, audits] = await store.transaction([
    call("replies.pending", undefined),
    call("replies.audits", undefined),
  ]) as [OpResult<"replies.pending">, OpResult<"replies.audits">];
  const waiting = new Map(rows.map((row) => {
    const reply: PendingReply = {
      id: row.id,
      submission: row.submission,
      ts: row.ts,
      chat: row.chat,
      message: row.message,
      ...(row.topic === null ? {} : { topic: row.topic }),
      draft: JSON.parse(row.draft) as ReplyDraft,
      attempts: row.attempts,
      ...(row.lastError === null ? {} : { lastError: row.lastError }),
    };
    return [row.id, reply];
  }));
  const kept = new Map(audits.map((row) => {
    const audit: ReplyAudit = {
      id: row.id,
      submission: row.submission ?? "",
      ts: row.ts,
      to: row.masked ?? "",
      result: row.result,
      done: row.done,
      attempts: row.attempts,
      ...(row.reason === null ? {} : { reason: row.reason }),
      ...(row.submission === null ? { erased: true as const } : {}),
    };
    return [row.id, audit];
  }));
  return new _ReplyStore(store, options.now, waiting, kept);
}

/**
 * The `replies.add` row of a waiting reply (its tries so far included): for the store, and for the
 * import of an older release's replies file (lib/storage/sqlite/replies_sql.ts).
 */
export function replyRow(reply: PendingReply): OpArgs<"replies.add"> {
  return {
    id: reply.id,
    submission: reply.submission,
    ts: reply.ts,
    chat: reply.chat,
    message: reply.message,
    topic: reply.topic,
    draft: JSON.stringify(reply.draft),
    masked: maskAddress(reply.draft.to),
    attempts: reply.attempts,
    lastError: reply.lastError ?? null,
  };
}

/** The `replies.addAudit` row of a done reply's audit (the import of an older release's file). */
export function auditRow(audit: ReplyAudit): OpArgs<"replies.addAudit"> {
  return {
    id: audit.id,
    submission: audit.submission,
    ts: audit.ts,
    masked: audit.to,
    result: audit.result,
    done: audit.done,
    attempts: audit.attempts,
    reason: audit.reason ?? null,
  };
}

class _ReplyStore implements ReplyStore {
  readonly #serial = serial();
  #closed = false;

  constructor(
    private readonly store: Store,
    private readonly now: () => Date,
    private readonly waiting: Map<string, PendingReply>,
    private readonly kept: Map<string, ReplyAudit>,
  ) {}

  add(reply: NewReply): Promise<boolean> {
    return this.#queue(async () => {
      if (this.waiting.has(reply.id) || this.kept.has(reply.id)) return false;
      const added = await this.store.run("replies.add", replyRow({ ...reply, attempts: 0 }));
      if (added) this.waiting.set(reply.id, { ...reply, attempts: 0 });
      return added;
    });
  }

  failed(id: string, _ts: string, error: string): Promise<void> {
    return this.#queue(async () => {
      const reply = this.waiting.get(id);
      if (reply === undefined) return;
      await this.store.run("replies.failed", { id, error });
      this.waiting.set(id, { ...reply, attempts: reply.attempts + 1, lastError: error });
    });
  }

  done(id: string, ts: string, result: ReplyResult, reason?: string): Promise<void> {
    return this.#queue(async () => {
      const reply = this.waiting.get(id);
      if (reply === undefined) return;
      await this.store.run("replies.done", { id, ts, result, reason });
      this.waiting.delete(id);
      this.kept.set(id, _auditOf(reply, ts, result, reason));
    });
  }

  pending(): PendingReply[] {
    return [...this.waiting.values()].sort(_byTs);
  }

  audits(): ReplyAudit[] {
    return [...this.kept.values()].sort(_byTs);
  }

  prune(beforeTs: string): Promise<number> {
    return this.#queue(async () => {
      const count = await this.store.run("replies.prune", { before: beforeTs });
      for (const audit of [...this.kept.values()]) {
        if (audit.done < beforeTs) this.kept.delete(audit.id);
      }
      return count;
    });
  }

  forget(submissionIds: ReadonlySet<string>): Promise<number> {
    return this.#queue(async () => {
      const ts = formatTimestamp(this.now());
      const count = await this.store.run("replies.forget", { submissions: [...submissionIds], ts });
      for (const reply of [...this.waiting.values()]) {
        if (!submissionIds.has(reply.submission)) continue;
        this.waiting.delete(reply.id);
        this.kept.set(reply.id, _erased(_auditOf(reply, ts, "given_up", "erased")));
      }
      for (const audit of [...this.kept.values()]) {
        if (submissionIds.has(audit.submission)) this.kept.set(audit.id, _erased(audit));
      }
      return count;
    });
  }

  close(): Promise<void> {
    return this.#queue(() => {
      this.#closed = true;
      return Promise.resolve();
    });
  }

  #queue<T>(work: () => Promise<T>): Promise<T> {
    return this.#serial(() => {
      if (this.#closed) throw new Error("the replies' store is closed");
      return work();
    });
  }
}

function _byTs<T extends { id: string; ts: string }>(a: T, b: T): number {
  return a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** An audit without its sender (lib/storage/sqlite/replies_sql.ts `replies.forget`). */
function _erased(audit: ReplyAudit): ReplyAudit {
  const { reason, ...rest } = audit;
  return {
    ...rest,
    submission: "",
    to: "",
    ...(reason === "erased" ? { reason } : {}),
    erased: true,
  };
}

/** What is kept of `reply` once it was sent or given up at `done`: its audit. */
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
