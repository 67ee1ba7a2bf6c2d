/**
 * One multipart part's header block, read (private to lib/files/).
 *
 * @module
 */

/** What a part's headers say. */
export interface PartHead {
  /** The `name` parameter (`%22`, `%0D`, `%0A` decoded as browsers encode them), if any. */
  readonly name: string | undefined;
  /** The `filename` (or `filename*`) parameter, if any: only a label. */
  readonly fileName: string | undefined;
  /** A file: a file name, or a `Content-Type` other than text/plain. */
  readonly file: boolean;
}

const NAME = /;\s*name\s*=\s*(?:"([^"]*)"|([^;\s"]*))/i;
const FILENAME = /;\s*filename\s*=\s*(?:"([^"]*)"|([^;\s"]*))/i;
const FILENAME_STAR = /;\s*filename\*\s*=\s*([^;\s]*)/i;

/** Browsers' escapes in a quoted multipart parameter (the HTML standard's). */
function unescapeParameter(value: string): string {
  return value.replaceAll("%22", '"').replaceAll("%0D", "\r").replaceAll("%0A", "\n");
}

/** RFC 5987's `charset'lang'value`, UTF-8 only; `undefined` when it does not decode. */
function extendedValue(value: string): string | undefined {
  const match = /^utf-8'[^']*'(.*)$/i.exec(value);
  if (match === null) return undefined;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return undefined;
  }
}

/**
 * The header block's lines (between the delimiter line and the blank line, UTF-8 decoded), read;
 * `undefined` for a line without a colon or holding a lone CR or LF.
 */
export function readPartHead(block: string): PartHead | undefined {
  let name: string | undefined;
  let fileName: string | undefined;
  let file = false;
  for (const line of block === "" ? [] : block.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0 || /[\r\n]/.test(line)) return undefined;
    const field = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1);
    if (field === "content-disposition") {
      const found = NAME.exec(value);
      if (found !== null) name = unescapeParameter(found[1] ?? found[2]!);
      const star = FILENAME_STAR.exec(value);
      const plain = FILENAME.exec(value);
      const extended = star === null ? undefined : extendedValue(star[1]!);
      if (extended !== undefined) fileName = extended;
      else if (plain !== null) fileName = unescapeParameter(plain[1] ?? plain[2]!);
      if (star !== null || plain !== null) file = true;
    } else if (field === "content-type") {
      if (value.split(";")[0]!.trim().toLowerCase() !== "text/plain") file = true;
    }
  }
  return { name, fileName, file };
}
