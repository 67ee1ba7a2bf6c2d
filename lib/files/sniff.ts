/**
 * What a file is, from its first bytes (its magic number), never from the type or the name the
 * sender declared: a PDF starts `%PDF-`, a PNG with its 8-byte signature, a Windows program with
 * `MZ`. Executables (PE, ELF, Mach-O, Java classes, scripts starting `#!`) and archives (which may
 * hide them) are told apart from documents, so only the kinds `ATTACHMENT_TYPES` lists pass.
 *
 * @module
 */

/** How many of a file's first bytes {@linkcode sniffType} needs (tar's mark sits at 257). */
export const SNIFF_BYTES = 512;

/** A kind of file contactd recognises, by the name `ATTACHMENT_TYPES` lists it under. */
export type FileKind =
  | "pdf"
  | "png"
  | "jpeg"
  | "gif"
  | "webp"
  | "txt"
  | "zip"
  | "gzip"
  | "7z"
  | "rar"
  | "tar"
  | "executable";

/** Every kind, in the order `--help` lists them. */
export const FILE_KINDS: readonly FileKind[] = [
  "pdf",
  "png",
  "jpeg",
  "gif",
  "webp",
  "txt",
  "zip",
  "gzip",
  "7z",
  "rar",
  "tar",
  "executable",
];

/**
 * The default `ATTACHMENT_TYPES`: documents and images that cannot carry a program. Archives
 * (zip, and with it .docx, .xlsx and .odt, which are zip files) are left out: a zip may hide an
 * executable, so listing one is the owner's choice.
 */
export const DEFAULT_ATTACHMENT_TYPES: readonly FileKind[] = [
  "pdf",
  "png",
  "jpeg",
  "gif",
  "webp",
  "txt",
];

/** The media type a kind is sent to Telegram and recorded as. */
export const MEDIA_TYPES: Readonly<Record<FileKind, string>> = {
  pdf: "application/pdf",
  png: "image/png",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  txt: "text/plain",
  zip: "application/zip",
  gzip: "application/gzip",
  "7z": "application/x-7z-compressed",
  rar: "application/vnd.rar",
  tar: "application/x-tar",
  executable: "application/octet-stream",
};

/** Magic numbers at offset 0, most specific first. */
const SIGNATURES: readonly (readonly [FileKind, readonly number[]])[] = [
  ["pdf", [0x25, 0x50, 0x44, 0x46, 0x2d]], // %PDF-
  ["png", [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ["jpeg", [0xff, 0xd8, 0xff]],
  ["gif", [0x47, 0x49, 0x46, 0x38, 0x37, 0x61]], // GIF87a
  ["gif", [0x47, 0x49, 0x46, 0x38, 0x39, 0x61]], // GIF89a
  ["zip", [0x50, 0x4b, 0x03, 0x04]],
  ["zip", [0x50, 0x4b, 0x05, 0x06]], // an empty zip
  ["zip", [0x50, 0x4b, 0x07, 0x08]], // a spanned zip
  ["gzip", [0x1f, 0x8b]],
  ["7z", [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]],
  ["rar", [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07]], // Rar!
  ["executable", [0x4d, 0x5a]], // MZ: Windows programs and libraries
  ["executable", [0x7f, 0x45, 0x4c, 0x46]], // ELF
  ["executable", [0xfe, 0xed, 0xfa, 0xce]], // Mach-O 32-bit
  ["executable", [0xfe, 0xed, 0xfa, 0xcf]], // Mach-O 64-bit
  ["executable", [0xce, 0xfa, 0xed, 0xfe]], // Mach-O 32-bit, little-endian
  ["executable", [0xcf, 0xfa, 0xed, 0xfe]], // Mach-O 64-bit, little-endian
  ["executable", [0xca, 0xfe, 0xba, 0xbe]], // Mach-O universal, Java class
  ["executable", [0x23, 0x21]], // #!: a script
  ["executable", [0x00, 0x61, 0x73, 0x6d]], // WebAssembly
];

/** Other containers that may carry programs or macros: refused like an unknown kind. */
const CONTAINERS: readonly (readonly number[])[] = [
  [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], // OLE2: old Office files, .msi
  [0x4d, 0x53, 0x43, 0x46], // MSCF: cabinet
  [0x42, 0x5a, 0x68], // BZh: bzip2
  [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], // xz
  [0x28, 0xb5, 0x2f, 0xfd], // zstd
];

/**
 * The kind of a file from its first bytes (at least {@linkcode SNIFF_BYTES} of them, or the
 * whole file when shorter), or `undefined` when contactd does not recognise it. Text is UTF-8
 * (a cut character at the end allowed) with no control characters but tab, line breaks and form
 * feed, not starting with `#!` (a script) nor `<` (markup, which a browser would run).
 */
export function sniffType(head: Uint8Array): FileKind | undefined {
  for (const [kind, signature] of SIGNATURES) if (startsWith(head, signature, 0)) return kind;
  if (CONTAINERS.some((signature) => startsWith(head, signature, 0))) return undefined;
  // RIFF....WEBP
  if (
    startsWith(head, [0x52, 0x49, 0x46, 0x46], 0) && startsWith(head, [0x57, 0x45, 0x42, 0x50], 8)
  ) {
    return "webp";
  }
  // ustar at 257: a tar archive.
  if (startsWith(head, [0x75, 0x73, 0x74, 0x61, 0x72], 257)) return "tar";
  return isPlainText(head) ? "txt" : undefined;
}

/** Whether `kind` is a program (never accepted, whatever `ATTACHMENT_TYPES` lists). */
export function isExecutable(kind: FileKind | undefined): boolean {
  return kind === "executable";
}

function startsWith(bytes: Uint8Array, signature: readonly number[], at: number): boolean {
  if (bytes.length < at + signature.length) return false;
  return signature.every((byte, i) => bytes[at + i] === byte);
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function isPlainText(head: Uint8Array): boolean {
  if (head.length === 0) return false;
  // A multi-byte character cut at the end of the head is still text: drop up to 3 bytes of it.
  let end = head.length;
  for (let back = 0; back < 3 && end > 0 && (head[end - 1]! & 0xc0) === 0x80; back++) end--;
  if (end > 0 && head[end - 1]! >= 0xc0) end--;
  let text: string;
  try {
    text = utf8.decode(head.subarray(0, end));
  } catch {
    return false;
  }
  // deno-lint-ignore no-control-regex -- control characters are what this looks for
  if (/[\x00-\x08\x0b\x0e-\x1f\x7f]/.test(text)) return false;
  const start = text.replace(/^\uFEFF/, "").trimStart();
  return !start.startsWith("#!") && !start.startsWith("<");
}
