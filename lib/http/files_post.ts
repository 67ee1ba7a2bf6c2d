/**
 * A form post with files, for a form that takes them (`ATTACHMENTS`): its body is read as a
 * stream (lib/files/multipart_stream.ts), never held whole, within a deadline that grows with the
 * files' budget; what it gave, or why it was refused, in the terms of the error table.
 *
 * @module
 */
import { BODY_LIMIT, BODY_TIMEOUT_MS } from "./body.ts";
import { clientGone } from "./client_gone.ts";
import type { ErrorCode } from "./errors.ts";
import { MAX_PARTS } from "../form/multipart.ts";
import { MAX_FILES, readMultipartStream, type ReceivedFile } from "../files/multipart_stream.ts";
import type { FileKind } from "../files/sniff.ts";
import type { Spool } from "../files/spool.ts";

/** A form's files: how many bytes, which kinds, and where they are kept. */
export interface AttachmentsDeps {
  /** `ATTACHMENTS` (or the form's own): the most bytes of files per submission; 0: none. */
  readonly maxBytes: number;
  /** `ATTACHMENT_TYPES`. */
  readonly kinds: ReadonlySet<FileKind>;
  /** Where files are written (`MESSAGES_FILE.files/`). */
  readonly spool: Spool;
}

/**
 * The slowest upload waited for, in bytes per second: a body with files may take
 * {@linkcode BODY_TIMEOUT_MS} plus its files' budget at this rate (10 MB: about 3 minutes).
 */
export const SLOWEST_UPLOAD_BYTES_PER_S = 64 * 1024;

/** How long a body with files of at most `maxBytes` may take to arrive, in milliseconds. */
export function filesTimeoutMs(maxBytes: number): number {
  return BODY_TIMEOUT_MS + Math.ceil(maxBytes / SLOWEST_UPLOAD_BYTES_PER_S) * 1000;
}

/** What a post with files gave. */
export type FilesPost =
  | { readonly kind: "parsed"; readonly pairs: [string, string][]; readonly files: ReceivedFile[] }
  | {
    readonly kind: "refused";
    readonly code: ErrorCode;
    readonly field?: string;
    readonly message?: string;
    /** The text parts read before the refusal (for the form's `_redirect_error`). */
    readonly pairs?: [string, string][];
    /** The body was left unread: the connection is to close. */
    readonly unread?: boolean;
  }
  /** The client went away mid-body (lib/http/client_gone.ts): its read's `error`. */
  | { readonly kind: "abandoned"; readonly error: unknown };

/** The sentence of a post whose files pass `maxBytes`. */
export function tooLargeMessage(maxBytes: number): string {
  return `The attached files are larger than this form accepts (${sizeText(maxBytes)} in all).`;
}

/** The sentence of a post with more than {@linkcode MAX_FILES} files. */
export function countMessage(): string {
  return `At most ${MAX_FILES} files are accepted with one message.`;
}

/** The sentence of a file of a kind not taken. */
export function kindMessage(kinds: ReadonlySet<FileKind>): string {
  return `This kind of file is not accepted here; send ${[...kinds].join(", ")}.`;
}

/** A size for people: `10 MB`, `512 KB`, `900 bytes`. */
export function sizeText(bytes: number): string {
  if (bytes >= 1_000_000) return `${Math.round(bytes / 100_000) / 10} MB`;
  if (bytes >= 1000) return `${Math.round(bytes / 1000)} KB`;
  return `${bytes} bytes`;
}

/**
 * Reads `request`'s multipart body with its files (a declared length over the text's 16 KiB plus
 * the files' budget is refused unread), the files written to the spool under `prefix`. A body
 * whose client went away mid-body is `abandoned`; any other failure is thrown. Either way its
 * files are removed.
 */
export async function readFilesPost(
  request: Request,
  deps: AttachmentsDeps,
  prefix: string,
  expired: Promise<unknown>,
): Promise<FilesPost> {
  const { maxBytes, kinds, spool } = deps;
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > BODY_LIMIT + maxBytes) {
    return {
      kind: "refused",
      code: "payload_too_large",
      message: tooLargeMessage(maxBytes),
      unread: true,
    };
  }
  if (request.body === null) return { kind: "refused", code: "invalid_multipart" };
  const type = request.headers.get("content-type") ?? "";
  const limits = { fileBytes: maxBytes, textBytes: BODY_LIMIT, kinds, maxParts: MAX_PARTS };
  const read = await readMultipartStream(request.body, type, limits, { spool, prefix, expired });
  switch (read.kind) {
    case "parsed":
      return read;
    case "timeout":
      return { kind: "refused", code: "request_timeout", unread: true };
    case "too_large":
      if (read.what === "count") {
        return {
          kind: "refused",
          code: "payload_too_large",
          message: countMessage(),
          unread: true,
        };
      }
      return read.what === "files"
        ? {
          kind: "refused",
          code: "payload_too_large",
          message: tooLargeMessage(maxBytes),
          unread: true,
        }
        : { kind: "refused", code: "payload_too_large", unread: true };
    case "read_failed":
      if (clientGone(read.error)) return { kind: "abandoned", error: read.error };
      throw read.error;
    case "invalid":
      return {
        kind: "refused",
        code: read.code,
        ...(read.field === undefined ? {} : { field: read.field }),
        ...(read.code === "file_not_accepted" ? { message: kindMessage(kinds) } : {}),
        ...(read.pairs === undefined ? {} : { pairs: read.pairs }),
      };
  }
}

/** Removes `files` from the spool (a post refused or held after they were written). */
export async function removeFiles(spool: Spool, files: readonly ReceivedFile[]): Promise<void> {
  await Promise.all(files.map((file) => spool.remove(file.stored)));
}
