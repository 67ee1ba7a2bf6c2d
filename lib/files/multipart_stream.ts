/**
 * A `multipart/form-data` body with files, read as a stream: each file part goes to disk as it
 * arrives (lib/files/spool.ts), its kind decided from its first bytes (lib/files/sniff.ts), its
 * sha256 computed on the way; the text parts are kept as pairs, like lib/form/multipart.ts's.
 * Two budgets hold while reading: the files' bytes (`ATTACHMENTS`) and everything else (the
 * spec's 16 KiB), each refused the moment it is passed, with every file of the body removed.
 * Memory holds one chunk and the text parts, never a file.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { collectGarbage } from "../common/collect_garbage.ts";
import { fileLabel } from "./file_name.ts";
import { type PartHead, readPartHead } from "./_part_headers.ts";
import { type FileKind, isExecutable, MEDIA_TYPES, SNIFF_BYTES, sniffType } from "./sniff.ts";
import type { Spool, SpoolWriter } from "./spool.ts";

/** One file received whole and kept in the spool. */
export interface ReceivedFile {
  /** The form field it came in. */
  readonly field: string;
  /** The sender's file name, cleaned: a label (lib/files/file_name.ts). */
  readonly name: string;
  /** Its size in bytes. */
  readonly size: number;
  /** Its media type, from its content. */
  readonly type: string;
  /** The kind its first bytes say. */
  readonly kind: FileKind;
  /** Its SHA-256, lower-case hex. */
  readonly sha256: string;
  /** Its name in the spool. */
  readonly stored: string;
}

/** The budgets of one body. */
export interface StreamLimits {
  /** The most bytes of files in all (`ATTACHMENTS`). */
  readonly fileBytes: number;
  /** The most bytes of everything else: the headers, the text parts, the delimiters. */
  readonly textBytes: number;
  /** The kinds `ATTACHMENT_TYPES` lists. */
  readonly kinds: ReadonlySet<FileKind>;
  /** The most parts. */
  readonly maxParts: number;
  /** The most files (default {@linkcode MAX_FILES}). */
  readonly maxFiles?: number;
}

/**
 * The most files one submission brings: each becomes a message in the chat, and one-byte files
 * fit by the hundred in the 16 KiB for the rest (a flood of documents from one post).
 */
export const MAX_FILES = 20;

/** What a streamed body gave. */
export type StreamResult =
  | {
    readonly kind: "parsed";
    readonly pairs: [string, string][];
    readonly files: ReceivedFile[];
  }
  | {
    readonly kind: "invalid";
    readonly code: "invalid_multipart" | "invalid_encoding" | "file_not_accepted";
    readonly field?: string;
    readonly pairs?: [string, string][];
  }
  | { readonly kind: "too_large"; readonly what: "files" | "text" | "count" }
  | { readonly kind: "timeout" }
  /** Reading the body itself failed, with its `error` (most often: the client went away). */
  | { readonly kind: "read_failed"; readonly error: unknown };

/** What a stream read needs besides the body. */
export interface StreamOptions {
  readonly spool: Spool;
  /** The prefix of the spool names of this body's files (`<prefix>-<index>`). */
  readonly prefix: string;
  /** Settles when the body has taken too long: the read ends `timeout`. */
  readonly expired?: Promise<unknown>;
  /**
   * A full garbage collection, run every {@linkcode COLLECT_EVERY_FILE_BYTES} of files read
   * (default lib/common/collect_garbage.ts): the body's chunks are garbage as soon as they are
   * written, which V8 left to pile up (a 50 MB upload took the service from 90 to 208 MiB).
   */
  readonly collect?: () => void;
}

/** How many bytes of files are read between two full collections. */
export const COLLECT_EVERY_FILE_BYTES = 4 * 1024 * 1024;

const BOUNDARY = /;\s*boundary\s*=\s*(?:"([^"\r\n]{1,70})"|([^;\s"]{1,70}))/i;
const ASCII = new TextEncoder();
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A reason the read stops early, thrown inside and turned into a result. */
class Stop {
  constructor(readonly result: StreamResult) {}
}

/** The file part being received. */
interface OpenFile {
  readonly field: string;
  readonly label: string;
  readonly fileName: string;
  head: Uint8Array[];
  headSize: number;
  size: number;
  kind?: FileKind;
  writer?: SpoolWriter;
  stored?: string;
  readonly hash: Hash;
}

/**
 * Reads `body` (a `multipart/form-data` body with `contentType`'s boundary) under `limits`,
 * writing its files to `options.spool`. A refusal, a timeout or a failure removes every file of
 * the body already written; the rest of the body is cancelled, not read. A read of the body that
 * fails is `read_failed` with its error (the spool's own failures are thrown). A file input left
 * empty (no name, no bytes) is left out; a file of a kind not listed, an executable whatever the
 * list, or one whose kind is not recognised is `file_not_accepted` naming its field.
 */
export async function readMultipartStream(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  limits: StreamLimits,
  options: StreamOptions,
): Promise<StreamResult> {
  const match = BOUNDARY.exec(contentType);
  if (match === null) {
    await body.cancel().catch(() => {});
    return { kind: "invalid", code: "invalid_multipart" };
  }
  const parser = new Parser(ASCII.encode(`\r\n--${match[1] ?? match[2]}`), limits, options);
  const reader = body.getReader();
  // Not Promise.race with the deadline on each read: every race leaves a reaction on the
  // deadline holding its chunk until the deadline passes (a 50 MB upload kept 100 MiB). At the
  // deadline the read is cancelled instead, which ends a read waiting for a stalled client.
  let timedOut = false;
  const expire = () => {
    timedOut = true;
    reader.cancel().catch(() => {});
  };
  options.expired?.then(expire, expire);
  try {
    while (true) {
      const next = await reader.read().catch((error) => {
        throw new Stop(timedOut ? { kind: "timeout" } : { kind: "read_failed", error });
      });
      if (timedOut) throw new Stop({ kind: "timeout" });
      if (next.done) break;
      await parser.push(next.value);
    }
    return parser.end();
  } catch (error) {
    reader.cancel().catch(() => {});
    await parser.discard();
    if (error instanceof Stop) return error.result;
    throw error;
  } finally {
    reader.releaseLock();
  }
}

/** Where the parser is within the body. */
type Phase = "preamble" | "delimiter" | "headers" | "text" | "file" | "done";

/** The state machine over the body's bytes. */
class Parser {
  #buffer: Uint8Array = new Uint8Array([0x0d, 0x0a]); // the first delimiter has no CRLF before it
  #phase: Phase = "preamble";
  #textUsed = -2;
  #fileUsed = 0;
  #parts = 0;
  #part: PartHead | undefined;
  #text: Uint8Array[] = [];
  #file: OpenFile | undefined;
  readonly #pairs: [string, string][] = [];
  readonly #files: ReceivedFile[] = [];
  readonly #written: string[] = [];

  constructor(
    readonly delimiter: Uint8Array,
    readonly limits: StreamLimits,
    readonly options: StreamOptions,
  ) {}

  /** Takes the next chunk of the body. */
  async push(chunk: Uint8Array): Promise<void> {
    this.#buffer = this.#buffer.length === 0 ? chunk : concat([this.#buffer, chunk]);
    while (await this.#step());
  }

  /** The body has ended: the result, or a refusal when it ended early. */
  end(): StreamResult {
    if (this.#phase !== "done") throw new Stop(this.#invalid("invalid_multipart"));
    return { kind: "parsed", pairs: this.#pairs, files: this.#files };
  }

  /** Removes every file written so far (after a refusal). */
  async discard(): Promise<void> {
    this.#file?.writer?.abandon();
    await Promise.all(this.#written.map((name) => this.options.spool.remove(name)));
  }

  #invalid(code: "invalid_multipart" | "invalid_encoding", field?: string): StreamResult {
    return { kind: "invalid", code, ...(field === undefined ? {} : { field }), pairs: this.#pairs };
  }

  #useText(bytes: number): void {
    this.#textUsed += bytes;
    if (this.#textUsed > this.limits.textBytes) throw new Stop({ kind: "too_large", what: "text" });
  }

  /** One step over the buffer; `true` when another may follow at once. */
  async #step(): Promise<boolean> {
    switch (this.#phase) {
      case "preamble":
      case "text":
      case "file":
        return await this.#inBody();
      case "delimiter":
        return this.#afterDelimiter();
      case "headers":
        return this.#headers();
      case "done":
        // The epilogue: counted, ignored.
        this.#useText(this.#buffer.length);
        this.#buffer = new Uint8Array(0);
        return false;
    }
  }

  /** Content up to the next delimiter: given to the part, the delimiter's tail kept back. */
  async #inBody(): Promise<boolean> {
    const at = indexOf(this.#buffer, this.delimiter);
    const end = at < 0 ? Math.max(0, this.#buffer.length - this.delimiter.length + 1) : at;
    const content = this.#buffer.subarray(0, end);
    if (content.length > 0) await this.#content(content);
    if (at < 0) {
      this.#buffer = this.#buffer.slice(end);
      return false;
    }
    this.#useText(this.delimiter.length);
    this.#buffer = this.#buffer.subarray(at + this.delimiter.length);
    await this.#endPart();
    this.#phase = "delimiter";
    return true;
  }

  async #content(bytes: Uint8Array): Promise<void> {
    if (this.#phase === "file") return await this.#fileContent(bytes);
    this.#useText(bytes.length);
    if (this.#phase === "text") this.#text.push(bytes.slice());
  }

  /** After a delimiter: `--` ends the body, else padding and CRLF start a part's headers. */
  #afterDelimiter(): boolean {
    if (this.#buffer.length < 2) return false;
    if (this.#buffer[0] === 0x2d && this.#buffer[1] === 0x2d) {
      this.#phase = "done";
      return true;
    }
    const lineEnd = indexOf(this.#buffer, CRLF);
    if (lineEnd < 0) {
      if (this.#buffer.length > 256) throw new Stop(this.#invalid("invalid_multipart"));
      return false;
    }
    const padding = this.#buffer.subarray(0, lineEnd);
    if (padding.some((byte) => byte !== 0x20 && byte !== 0x09)) {
      throw new Stop(this.#invalid("invalid_multipart"));
    }
    this.#useText(lineEnd + 2);
    this.#buffer = this.#buffer.subarray(lineEnd + 2);
    if (++this.#parts > this.limits.maxParts) throw new Stop(this.#invalid("invalid_multipart"));
    this.#phase = "headers";
    return true;
  }

  /** A part's header block, up to its blank line. */
  #headers(): boolean {
    const blank = this.#buffer[0] === 0x0d && this.#buffer[1] === 0x0a
      ? -2
      : indexOf(this.#buffer, HEADERS_END);
    if (blank === -1) {
      if (this.#textUsed + this.#buffer.length > this.limits.textBytes) {
        throw new Stop({ kind: "too_large", what: "text" });
      }
      return false;
    }
    const blockEnd = Math.max(blank, 0);
    const skip = blank === -2 ? 2 : blank + 4;
    let block: string;
    try {
      block = strict.decode(this.#buffer.subarray(0, blockEnd));
    } catch {
      throw new Stop(this.#invalid("invalid_encoding"));
    }
    this.#useText(skip);
    this.#buffer = this.#buffer.subarray(skip);
    const head = readPartHead(block);
    if (head === undefined || head.name === undefined || head.name === "") {
      throw new Stop(this.#invalid("invalid_multipart"));
    }
    this.#part = head;
    if (head.file) {
      const label = head.name.slice(0, 40);
      this.#file = {
        field: head.name,
        label,
        fileName: head.fileName ?? "",
        head: [],
        headSize: 0,
        size: 0,
        hash: createHash("sha256"),
      };
      this.#phase = "file";
    } else {
      this.#text = [];
      this.#phase = "text";
    }
    return true;
  }

  /** Bytes of the open file: counted, hashed, held until its kind is known, then written. */
  async #fileContent(bytes: Uint8Array): Promise<void> {
    const file = this.#file!;
    const before = this.#fileUsed;
    this.#fileUsed += bytes.length;
    if (this.#fileUsed > this.limits.fileBytes) {
      throw new Stop({ kind: "too_large", what: "files" });
    }
    const every = COLLECT_EVERY_FILE_BYTES;
    if (Math.floor(before / every) !== Math.floor(this.#fileUsed / every)) {
      (this.options.collect ?? collectGarbage)();
    }
    file.size += bytes.length;
    file.hash.update(bytes);
    if (file.writer !== undefined) return await file.writer.write(bytes);
    file.head.push(bytes.slice());
    file.headSize += bytes.length;
    if (file.headSize >= SNIFF_BYTES) await this.#openFile(file);
  }

  /** The file's kind from its head; accepted, the file is created and the head written. */
  async #openFile(file: OpenFile): Promise<void> {
    const head = concat(file.head);
    const kind = sniffType(head.subarray(0, SNIFF_BYTES));
    if (kind === undefined || isExecutable(kind) || !this.limits.kinds.has(kind)) {
      throw new Stop({
        kind: "invalid",
        code: "file_not_accepted",
        field: file.label,
        pairs: this.#pairs,
      });
    }
    if (this.#files.length >= (this.limits.maxFiles ?? MAX_FILES)) {
      throw new Stop({ kind: "too_large", what: "count" });
    }
    file.kind = kind;
    const stored = `${this.options.prefix}-${this.#files.length}`;
    this.#written.push(stored);
    file.writer = await this.options.spool.create(stored);
    file.stored = stored;
    file.head = [];
    await file.writer.write(head);
  }

  /** The part before a delimiter has ended. */
  async #endPart(): Promise<void> {
    if (this.#phase === "text") {
      let value: string;
      try {
        value = strict.decode(concat(this.#text));
      } catch {
        throw new Stop(this.#invalid("invalid_encoding"));
      }
      this.#pairs.push([this.#part!.name!, value]);
      this.#text = [];
    } else if (this.#phase === "file") {
      await this.#endFile(this.#file!);
      this.#file = undefined;
    }
    this.#part = undefined;
  }

  async #endFile(file: OpenFile): Promise<void> {
    // An empty file input (no file chosen): no name, no bytes, left out.
    if (file.size === 0 && file.fileName === "") return;
    if (file.writer === undefined) await this.#openFile(file);
    await file.writer!.close();
    this.#files.push({
      field: file.field,
      name: fileLabel(file.fileName, file.kind!),
      size: file.size,
      type: MEDIA_TYPES[file.kind!],
      kind: file.kind!,
      sha256: file.hash.digest("hex"),
      stored: file.stored!,
    });
  }
}

const CRLF = new Uint8Array([0x0d, 0x0a]);
const HEADERS_END = new Uint8Array([0x0d, 0x0a, 0x0d, 0x0a]);

/** The first index of `needle` in `hay`, or -1. */
export function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  const first = needle[0]!;
  const last = hay.length - needle.length;
  let at = hay.indexOf(first);
  while (at >= 0 && at <= last) {
    let i = 1;
    while (i < needle.length && hay[at + i] === needle[i]) i++;
    if (i === needle.length) return at;
    at = hay.indexOf(first, at + 1);
  }
  return -1;
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const size = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}
