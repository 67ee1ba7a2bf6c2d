/**
 * `multipart/form-data` posts (a form with `enctype="multipart/form-data"`): decoded into the
 * same name/value pairs as an urlencoded post; a file is refused, never relayed nor dropped.
 *
 * @module
 */
import type { Invalid } from "./submission.ts";

/**
 * The pairs of a multipart body, in order, or why it was refused: with the text parts read when
 * the body did parse (so a refusal can still go to the form's `_redirect_error`).
 */
export type MultipartResult =
  | { readonly kind: "pairs"; readonly pairs: [string, string][] }
  | Invalid & { readonly pairs?: [string, string][] };

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
/** One character per byte, whatever the bytes: the part headers are ASCII, the rest only skipped. */
const LATIN1 = new TextDecoder("latin1");

/** The most parts a body is scanned for: a 16 KiB body has room for fewer. */
export const MAX_PARTS = 1000;

/** What the headers of one part say, read by {@linkcode scanParts}. */
export interface PartHeaders {
  /** The `name` parameter as written (quotes removed), `undefined` when absent. */
  readonly name: string | undefined;
  /** A file: a `filename` or `filename*` parameter, or a `Content-Type` other than text/plain. */
  readonly file: boolean;
  /** A header line holds a lone CR or LF (a name with a line break in it). */
  readonly broken: boolean;
}

const BOUNDARY = /;\s*boundary\s*=\s*(?:"([^"\r\n]{1,70})"|([^;\s"]{1,70}))/i;
const NAME = /;\s*name\s*=\s*(?:"([^"]*)"|([^;\s"]*))/i;
const FILENAME = /;\s*filename\*?\s*=/i;

/**
 * The header blocks of a multipart body's parts, in order (FormData hides them): `undefined`
 * when there is no boundary, no part or no closing delimiter. Bounded: one pass over the body
 * (at most 16 KiB), at most {@linkcode MAX_PARTS} parts.
 */
export function scanParts(bytes: Uint8Array, contentType: string): PartHeaders[] | undefined {
  const match = BOUNDARY.exec(contentType);
  if (match === null) return undefined;
  const delimiter = `--${match[1] ?? match[2]}`;
  // Latin-1: one character per byte, whatever the bytes (their UTF-8 is checked apart).
  const text = LATIN1.decode(bytes);
  const parts: PartHeaders[] = [];
  let at = text.startsWith(delimiter) ? 0 : text.indexOf(`\r\n${delimiter}`);
  if (at > 0) at += 2;
  while (at >= 0 && parts.length < MAX_PARTS) {
    const after = at + delimiter.length;
    if (text.startsWith("--", after)) return parts.length === 0 ? undefined : parts;
    const start = text.indexOf("\r\n", after);
    if (start < 0) return undefined;
    const end = text.indexOf("\r\n\r\n", start);
    if (end < 0) return undefined;
    const lines = text.slice(start + 2, end).split("\r\n");
    let name: string | undefined;
    let file = false;
    let broken = false;
    for (const line of lines) {
      if (/[\r\n]/.test(line)) broken = true;
      const colon = line.indexOf(":");
      const field = line.slice(0, colon < 0 ? 0 : colon).trim().toLowerCase();
      const value = line.slice(colon + 1);
      if (field === "content-disposition") {
        const found = NAME.exec(value);
        if (found !== null) name = found[1] ?? found[2];
        if (FILENAME.test(value)) file = true;
      } else if (field === "content-type") {
        if (value.split(";")[0]!.trim().toLowerCase() !== "text/plain") file = true;
      }
    }
    parts.push({ name, file, broken });
    const next = text.indexOf(`\r\n${delimiter}`, end + 4);
    at = next < 0 ? -1 : next + 2;
  }
  return undefined;
}

/**
 * Decodes a multipart body with its `Content-Type` (which names the boundary). A file part (a
 * `filename` or `filename*` parameter, or a `Content-Type` other than `text/plain`) is
 * `file_not_accepted` naming its field, unless it is an empty file input (no file chosen: no
 * name, no bytes), which is left out. A part without a name, or with a line break in its name, a
 * body that is not multipart, lacks a boundary or its closing delimiter, is `invalid_multipart`
 * (never a part silently dropped); one that is not UTF-8 throughout is `invalid_encoding` (never
 * replaced).
 */
export async function decodeMultipart(
  bytes: Uint8Array,
  contentType: string,
): Promise<MultipartResult> {
  let form: FormData;
  try {
    // A copy (at most the 16 KiB body) gives Response a buffer of its own.
    const copy = bytes.slice();
    form = await new Response(copy, { headers: { "content-type": contentType } }).formData();
  } catch {
    // TypeError: no boundary, or a body that does not parse as parts.
    return { kind: "invalid", code: "invalid_multipart" };
  }
  const pairs: [string, string][] = [];
  const entries = [...form];
  for (const [name, value] of entries) if (typeof value === "string") pairs.push([name, value]);
  const refused = (problem: Invalid): MultipartResult => ({ ...problem, pairs });
  const parts = scanParts(bytes, contentType);
  // Every part FormData read, and none it dropped (no name, a line break in it).
  if (parts === undefined || parts.length !== entries.length) {
    return refused({ kind: "invalid", code: "invalid_multipart" });
  }
  for (const [i, part] of parts.entries()) {
    const [name, value] = entries[i]!;
    if (part.broken || part.name === undefined || name === "" || /[\r\n]/.test(name)) {
      return refused({ kind: "invalid", code: "invalid_multipart" });
    }
    const emptyInput = typeof value !== "string" && value.name === "" && value.size === 0;
    if ((part.file || typeof value !== "string") && !emptyInput) {
      return refused({
        kind: "invalid",
        code: "file_not_accepted",
        field: name.slice(0, 40),
      });
    }
  }
  // The parser replaces invalid UTF-8 silently: with no file part, every byte must be text.
  try {
    strict.decode(bytes);
  } catch {
    return { kind: "invalid", code: "invalid_encoding" };
  }
  return { kind: "pairs", pairs };
}
