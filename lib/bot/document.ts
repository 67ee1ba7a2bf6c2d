/**
 * `sendDocument`: a file uploaded to the chat as a document (multipart/form-data), streamed from
 * disk, never held whole; a reply to the notification it belongs to, captioned with its id.
 *
 * @module
 */
import { type BotApiOptions, type BotApiResult, callBotApiWith } from "./api.ts";

/** The most bytes a bot may upload to Telegram (`sendDocument`: 50 MB). */
export const MAX_UPLOAD_BYTES = 50 * 1024 * 1024;

/**
 * The slowest upload waited for, in bytes per second: an upload may take `MESSENGER_TIMEOUT_MS`
 * plus its size at this rate (50 MB: about 7 minutes).
 */
export const SLOWEST_SEND_BYTES_PER_S = 128 * 1024;

/** A file to upload. */
export interface Upload {
  /** The name the chat shows (the sender's, cleaned: a label). */
  readonly name: string;
  /** Its media type. */
  readonly type: string;
  /** Its size in bytes, exactly (sent as part of `Content-Length`). */
  readonly size: number;
  /** Its bytes, read when the call starts. */
  readonly open: () => ReadableStream<Uint8Array>;
}

/** Where a document goes besides its chat. */
export interface DocumentExtra {
  /** The forum topic (`message_thread_id`). */
  readonly topicId?: number | undefined;
  /** The message it answers (`reply_parameters`; sent anyway if that message is gone). */
  readonly replyTo?: number | undefined;
  /** Its caption (plain text). */
  readonly caption?: string | undefined;
  /** Without a sound (`disable_notification`), as its notification was sent. */
  readonly silent?: boolean | undefined;
}

const encoder = new TextEncoder();

/**
 * A `Content-Disposition` file name, quoted: a `"` becomes `'`, a backslash or line break `_`
 * (parsers differ on escapes; the name is only a label, lib/files/file_name.ts).
 */
function quoted(value: string): string {
  return `"${value.replaceAll('"', "'").replace(/[\\\r\n]/g, "_")}"`;
}

/**
 * One `sendDocument` of `file` to `chatId`, with `extra`'s topic, reply and caption; the upload
 * is streamed, its time limit grown by its size. Never throws.
 */
export function sendDocument(
  options: BotApiOptions,
  chatId: number,
  file: Upload,
  extra: DocumentExtra = {},
): Promise<BotApiResult> {
  const fields: [string, string][] = [["chat_id", String(chatId)]];
  if (extra.topicId !== undefined) fields.push(["message_thread_id", String(extra.topicId)]);
  if (extra.caption !== undefined) fields.push(["caption", extra.caption]);
  if (extra.silent === true) fields.push(["disable_notification", "true"]);
  if (extra.replyTo !== undefined) {
    const reply = { message_id: extra.replyTo, allow_sending_without_reply: true };
    fields.push(["reply_parameters", JSON.stringify(reply)]);
  }
  const boundary = `contactd-${crypto.randomUUID()}`;
  const head = encoder.encode(
    fields.map(([name, value]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
    ).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="document"; filename=${
        quoted(file.name)
      }\r\nContent-Type: ${file.type}\r\n\r\n`,
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const timeoutMs = options.timeoutMs + Math.ceil(file.size / SLOWEST_SEND_BYTES_PER_S) * 1000;
  return callBotApiWith({ ...options, timeoutMs }, "sendDocument", () => ({
    body: framed(head, file.open(), tail),
    type: `multipart/form-data; boundary=${boundary}`,
    length: head.length + file.size + tail.length,
  }));
}

/** `head`, then `content` chunk by chunk (pulled as the upload goes), then `tail`. */
function framed(
  head: Uint8Array,
  content: ReadableStream<Uint8Array>,
  tail: Uint8Array,
): ReadableStream<Uint8Array> {
  const reader = content.getReader();
  let started = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        return controller.enqueue(head);
      }
      const next = await reader.read();
      if (!next.done) return controller.enqueue(next.value);
      controller.enqueue(tail);
      controller.close();
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
