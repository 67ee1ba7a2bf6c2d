/**
 * The sender's file name, as a label only: contactd never opens, creates or sends a file under
 * it (the files on disk have names contactd chooses, lib/files/spool.ts).
 *
 * @module
 */

import type { FileKind } from "./sniff.ts";

/** The longest label kept, in characters. */
export const FILE_NAME_MAX = 100;

/**
 * The longest label kept, in UTF-8 bytes: with `<id>-<n>-` before it (`export --files`), a
 * file name stays under the 255 bytes file systems allow (100 emoji are 400 bytes).
 */
export const FILE_NAME_MAX_BYTES = 160;

/** The label of a file whose name is empty once cleaned. */
export const UNNAMED_FILE = "file";

/**
 * The label for a sender's file name: its last path segment (after any `/` or `\`), NFC,
 * without control, format (bidirectional overrides, zero-width) or line-breaking characters,
 * runs of spaces made one, no leading dots (no hidden or `..` names), at most
 * {@linkcode FILE_NAME_MAX} characters; {@linkcode UNNAMED_FILE} when nothing is left.
 */
export function cleanFileName(raw: string): string {
  const segment = raw.split(/[/\\]/).at(-1) ?? "";
  const cleaned = segment
    .normalize("NFC")
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "")
    .replace(/\s+/gu, " ")
    .trim()
    .replace(/^[.\s]+/u, "");
  const cut = cutToBytes([...cleaned].slice(0, FILE_NAME_MAX), FILE_NAME_MAX_BYTES).trim();
  return cut === "" ? UNNAMED_FILE : cut;
}

const encoder = new TextEncoder();

/** `chars` joined, as many of them from the start as fit in `max` UTF-8 bytes. */
function cutToBytes(chars: readonly string[], max: number): string {
  let bytes = 0;
  let kept = 0;
  for (const char of chars) {
    bytes += encoder.encode(char).length;
    if (bytes > max) break;
    kept++;
  }
  return chars.slice(0, kept).join("");
}

/**
 * The extensions a label of each kind may keep, the first added when it has none of them: a
 * name's extension decides what a desktop does on a double click (`CV.pdf.bat`, `x.html`,
 * `app.jar` run), so it must agree with the kind the content was sniffed as.
 */
export const KIND_EXTENSIONS: Readonly<Record<FileKind, readonly string[]>> = {
  pdf: ["pdf"],
  png: ["png"],
  jpeg: ["jpg", "jpeg", "jfif"],
  gif: ["gif"],
  webp: ["webp"],
  txt: ["txt", "text", "csv", "tsv", "md", "log"],
  zip: ["zip", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub"],
  gzip: ["gz", "tgz"],
  "7z": ["7z"],
  rar: ["rar"],
  tar: ["tar"],
  executable: ["bin"],
};

/**
 * The label of a received file of `kind`: {@linkcode cleanFileName}, its trailing dots dropped
 * (Windows drops them too, `x.bat.` is `x.bat`), and the kind's extension added unless it ends
 * with one of {@linkcode KIND_EXTENSIONS} (`CV.pdf.bat` sniffed as text: `CV.pdf.bat.txt`).
 */
export function fileLabel(raw: string, kind: FileKind): string {
  const extensions = KIND_EXTENSIONS[kind];
  const extra = `.${extensions[0]}`.length;
  const name = cleanFileName(raw).replace(/[.\s]+$/u, "");
  const dot = name.lastIndexOf(".");
  const own = dot <= 0 ? "" : name.slice(dot + 1).toLowerCase();
  if (extensions.includes(own)) return name;
  const base = cutToBytes([...name].slice(0, FILE_NAME_MAX - extra), FILE_NAME_MAX_BYTES - extra)
    .trim();
  return `${base === "" ? UNNAMED_FILE : base}.${extensions[0]}`;
}
