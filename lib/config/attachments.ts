/**
 * `ATTACHMENTS`, `FORM_<ID>_ATTACHMENTS` and `ATTACHMENT_TYPES`: whether a form takes files, how
 * many bytes of them per submission, and which kinds (lib/files/sniff.ts).
 *
 * @module
 */
import { FILE_KINDS, type FileKind } from "../files/sniff.ts";

/** The largest `ATTACHMENTS`: 50 MiB, the most a bot may upload to Telegram. */
export const MAX_ATTACHMENT_BYTES = 50 * 1024 * 1024;

/** The attachments a form takes. */
export interface AttachmentsConfig {
  /** The most bytes of files per submission; `0`: files are refused (`415 file_not_accepted`). */
  readonly maxBytes: number;
  /** The kinds accepted, by their first bytes. */
  readonly kinds: readonly FileKind[];
}

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  b: 1,
  kb: 1000,
  mb: 1_000_000,
  kib: 1024,
  mib: 1024 * 1024,
};

/**
 * A size such as `10MB`, `512KiB` or `0`: bytes, KB and MB (powers of 1000), KiB and MiB (of
 * 1024), letter case ignored, from 0 (off) to {@linkcode MAX_ATTACHMENT_BYTES}; `undefined` when
 * `text` is not one.
 */
export function parseSize(text: string): number | undefined {
  const match = /^(\d{1,9}(?:\.\d{1,3})?)\s*([a-z]*)$/i.exec(text.trim());
  if (match === null) return undefined;
  const unit = UNITS[match[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(match[1]) * unit);
  return bytes <= MAX_ATTACHMENT_BYTES ? bytes : undefined;
}

/** Why {@linkcode parseAttachmentSize} refused a value (the setting's name goes before it). */
export const SIZE_RULE = `must be a size like 10MB or 512KiB (0: no files), at most 50MiB`;

/** `ATTACHMENTS` (or `FORM_<ID>_ATTACHMENTS`): bytes, or the error sentence's tail. */
export function parseAttachmentSize(text: string): number | string {
  return parseSize(text) ?? SIZE_RULE;
}

/**
 * `ATTACHMENT_TYPES`: a comma list of kinds (`pdf,png,jpeg`), or the error sentence's tail.
 * `executable` is never accepted (a program is refused whatever the list says).
 */
export function parseAttachmentTypes(text: string): FileKind[] | string {
  const kinds: FileKind[] = [];
  for (const raw of text.split(",")) {
    const kind = raw.trim().toLowerCase();
    if (kind === "") continue;
    if (kind === "executable") return "cannot list executable: programs are always refused";
    if (!(FILE_KINDS as readonly string[]).includes(kind)) {
      return `must be a comma list of ${FILE_KINDS.filter((k) => k !== "executable").join(", ")}`;
    }
    if (!kinds.includes(kind as FileKind)) kinds.push(kind as FileKind);
  }
  return kinds.length === 0 ? "must name at least one kind of file" : kinds;
}
