/**
 * The service's files sent with forms (`ATTACHMENTS`): the spool beside the backup file
 * (`MESSAGES_FILE.files/`), opened when a form takes files or files are still kept; what the
 * handler, the upkeep and the outbox need of it.
 *
 * @module
 */
import type { Config } from "../config/config.ts";
import { filesDirectory, openSpool, type Spool } from "../files/spool.ts";
import type { AttachmentsDeps } from "../http/files_post.ts";
import type { Logger } from "../log/logger.ts";
import { keepingAttachments, keptAttachments, sweepSpool } from "../storage/attachments.ts";
import { denoFs, pathPresent } from "../storage/file_system.ts";
import type { KeptFile } from "../storage/erasure.ts";
import type { OutboxSubmission } from "../storage/outbox.ts";
import type { Store, StoreCall } from "../storage/store.ts";
import { sendMessage } from "../bot/api.ts";
import { sendDocument } from "../bot/document.ts";
import { looksLikeSpam } from "../learn/classifier.ts";
import { DocumentSender } from "../delivery/documents.ts";
import type { DeliveryClock, DeliveryQueue } from "../delivery/queue.ts";
import type { ServiceState } from "./state.ts";

/** The files part of a running service. */
export interface ServiceFiles {
  readonly spool: Spool;
  /** The default form's (its `maxBytes` is `ATTACHMENTS`; each form has its own). */
  readonly attachments: AttachmentsDeps;
  /** Their part in retention and erasure. */
  readonly kept: KeptFile;
  /**
   * Keeps a new submission's files: the calls that list them, for its outbox row's commit
   * (lib/http/accept.ts `keepingFiles`).
   */
  readonly keeping: (submission: OutboxSubmission) => Promise<StoreCall[]>;
}

/** Whether any form of `config` takes files. */
export function takesFiles(config: Config): boolean {
  return config.attachments.maxBytes > 0 ||
    config.forms.some((form) => form.attachmentBytes > 0);
}

/**
 * Opens the spool when a form takes files or the directory is there (files kept from before,
 * which retention and erasure still reach); `undefined` otherwise. Files nothing in the store
 * lists (an upload a crash cut short) are removed, logged as `files_swept`.
 */
export async function openServiceFiles(
  config: Config,
  store: Pick<Store, "run">,
  log: Logger,
): Promise<ServiceFiles | undefined> {
  const directory = filesDirectory(config.messagesFile);
  if (!takesFiles(config) && !await pathPresent(denoFs, directory)) return undefined;
  const spool = await openSpool(directory);
  const stray = await sweepSpool(store, spool, await spool.list());
  if (stray.length > 0) log("info", { event: "files_swept", count: stray.length });
  return {
    spool,
    attachments: {
      maxBytes: config.attachments.maxBytes,
      kinds: new Set(config.attachments.kinds),
      spool,
    },
    kept: keptAttachments(store, spool),
    // A notification marked as likely spam is sent silently: its files too.
    keeping: (submission) =>
      keepingAttachments(spool, submission, { silent: looksLikeSpam(submission.spamScore) }),
  };
}

/** What the document sender needs of the world. */
export interface DocumentsIO {
  readonly fetch: typeof fetch;
  readonly clock: DeliveryClock;
  readonly random: () => number;
  readonly log: Logger;
}

/**
 * Starts sending the files waiting (lib/delivery/documents.ts) through `queue`'s pacing, onto
 * `stack` (closed before the queue: a file in flight is noted first). Nothing without a bot.
 */
export function startDocuments(
  config: Config,
  io: DocumentsIO,
  stack: AsyncDisposableStack,
  state: Pick<ServiceState, "store" | "ledger">,
  queue: DeliveryQueue,
  files: ServiceFiles,
  forgotten: { has(id: string): boolean },
): DocumentSender | undefined {
  const { messenger } = config;
  if (messenger === undefined) return undefined;
  const api = {
    apiUrl: config.apiUrl,
    token: messenger.token,
    timeoutMs: config.timeoutMs,
    fetch: io.fetch,
  };
  const sender = new DocumentSender({
    store: state.store,
    ledger: state.ledger,
    call: (chat, fn, lane) => queue.call(chat, fn, lane),
    sendFile: (file, chat, extra) =>
      sendDocument(api, chat, {
        name: file.name,
        type: file.type,
        size: file.size,
        open: () => _readable(files.spool.path(file.stored)),
      }, extra),
    say: (chat, text, extra) =>
      sendMessage(api, chat, text, extra.topicId, {
        replyTo: extra.replyTo,
        ...(extra.silent === true ? { silent: true } : {}),
      }),
    topicOf: (form, chat) => {
      const own = form === null ? undefined : config.forms.find((f) => f.id === form);
      const [ownChat, topic] = own === undefined
        ? [messenger.chatId, messenger.topicId]
        : [own.chatId, own.topicId];
      return ownChat === chat ? topic : undefined;
    },
    forgotten,
    maxAgeMs: config.deliveryMaxAgeMs,
    wallNow: io.clock.wallNow,
    now: io.clock.now,
    setTimer: (fn, ms) => io.clock.setTimer(fn, ms),
    clearTimer: (handle) => io.clock.clearTimer(handle),
    random: io.random,
    log: io.log,
  });
  sender.start();
  stack.defer(() => sender.close());
  return sender;
}

/** A stored file's bytes as a stream, opened when the upload starts (never through a link). */
function _readable(path: string): ReadableStream<Uint8Array> {
  let file: Deno.FsFile | undefined;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (reader === undefined) {
        if ((await Deno.lstat(path)).isSymlink) throw new Error(`${path} is a link`);
        file = await Deno.open(path, { read: true });
        reader = file.readable.getReader();
      }
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}
