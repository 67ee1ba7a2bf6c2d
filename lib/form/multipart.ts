/**
 * `multipart/form-data` posts (a form with `enctype="multipart/form-data"`): decoded into the
 * same name/value pairs as an urlencoded post; a file is refused, never relayed nor dropped.
 *
 * @module
 */
import type { Invalid } from "./submission.ts";

/** The pairs of a multipart body, in order, or why it was refused. */
export type MultipartResult =
  | { readonly kind: "pairs"; readonly pairs: [string, string][] }
  | Invalid;

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Decodes a multipart body with its `Content-Type` (which names the boundary). A file part is
 * `file_not_accepted` naming its field, unless it is an empty file input (no file chosen: no name,
 * no bytes), which is left out. A body that is not multipart, or lacks a boundary, is
 * `invalid_multipart`; one that is not UTF-8 throughout is `invalid_encoding` (never replaced).
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
  for (const [name, value] of form) {
    if (typeof value === "string") pairs.push([name, value]);
    else if (value.name !== "" || value.size > 0) {
      return {
        kind: "invalid",
        code: "file_not_accepted",
        field: name.slice(0, 40),
        message: "Files are not accepted: contactd relays text only.",
      };
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
