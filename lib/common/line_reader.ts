/**
 * Reading a file line by line in memory that does not grow with it: the one line reader of the
 * backup file (export, erasure, retention, a reply's record). The bytes are split at `\n`, a byte
 * UTF-8 never uses inside a character, so a read that ends inside a character or right beside a
 * line break changes nothing; each line is decoded on its own. A line longer than the cap is
 * never held: it is reported by its place in the file only (its text `undefined`). Every
 * {@linkcode COLLECT_EVERY_BYTES} read, a full garbage collection frees what the lines' parsing
 * left outside the heap (lib/common/collect_garbage.ts says why).
 *
 * @module
 */
import { COLLECT_EVERY_BYTES, collectGarbage } from "./collect_garbage.ts";

export { COLLECT_EVERY_BYTES } from "./collect_garbage.ts";

/** The longest line read as text; a longer one is damaged (a record is at most a few KiB). */
export const MAX_LINE_BYTES = 1 << 20;

/** How many bytes one read asks for. */
export const READ_CHUNK_BYTES = 1 << 16;

/** What the reader reads from: an open file (`Deno.FsFile`, storage's `StorageFile`). */
export interface ByteSource {
  read(into: Uint8Array): Promise<number | null>;
}

/** One line of the file. */
export interface FileLine {
  /** Its text without the line break; `undefined` when it is longer than the cap (not read). */
  readonly text: string | undefined;
  /**
   * Its bytes without the line break (`undefined` with the text): valid only until the next line
   * is asked for (they are the reader's buffer).
   */
  readonly bytes: Uint8Array | undefined;
  /** Where it starts in the file (bytes). */
  readonly start: number;
  /** Where it ends (bytes, its line break not included). */
  readonly end: number;
  /** It ends with a line break; false for a last line without one (being appended, or torn). */
  readonly whole: boolean;
}

/** Options of {@linkcode readLines}. */
export interface LineOptions {
  /** The longest line read as text; default {@linkcode MAX_LINE_BYTES}. */
  readonly maxLineBytes?: number;
  /** How many bytes one read asks for; default {@linkcode READ_CHUNK_BYTES}. */
  readonly chunkBytes?: number;
  /** Where the source is now in the file (the lines' offsets count from it); default 0. */
  readonly start?: number;
  /** Nothing at or after this offset is read: a line it cuts is a last line without a break. */
  readonly end?: number;
  /** Asked for a full garbage collection every {@linkcode COLLECT_EVERY_BYTES} read. */
  readonly collect?: () => void;
}

/**
 * The lines of `source` from where it is, in order, each at most `maxLineBytes` held: memory is
 * one read's chunk plus one line, whatever the file's size. A last line without its line break
 * comes last, `whole: false`.
 */
export async function* readLines(
  source: ByteSource,
  options: LineOptions = {},
): AsyncGenerator<FileLine> {
  const max = options.maxLineBytes ?? MAX_LINE_BYTES;
  const chunk = new Uint8Array(options.chunkBytes ?? READ_CHUNK_BYTES);
  const decoder = new TextDecoder();
  const carry = new _Carry(max);
  let offset = options.start ?? 0; // the file offset of chunk[0]
  let lineStart = offset;
  let uncollected = 0;
  while (true) {
    const room = Math.min(chunk.byteLength, (options.end ?? Infinity) - offset);
    const n = room <= 0 ? null : await source.read(chunk.subarray(0, room));
    if (n === null || n === 0) break;
    uncollected += n;
    if (uncollected >= COLLECT_EVERY_BYTES) {
      (options.collect ?? collectGarbage)();
      uncollected = 0;
    }
    let from = 0;
    while (from < n) {
      const at = chunk.subarray(0, n).indexOf(10, from);
      const stop = at === -1 ? n : at;
      carry.add(chunk.subarray(from, stop), at !== -1);
      if (at === -1) break;
      const bytes = carry.take(chunk.subarray(from, stop));
      yield {
        text: bytes === undefined ? undefined : decoder.decode(bytes),
        bytes,
        start: lineStart,
        end: offset + at,
        whole: true,
      };
      lineStart = offset + at + 1;
      from = at + 1;
    }
    offset += n;
  }
  if (lineStart < offset) {
    const bytes = carry.take(new Uint8Array(0));
    const text = bytes === undefined ? undefined : decoder.decode(bytes);
    yield { text, bytes, start: lineStart, end: offset, whole: false };
  }
}

/** The part of a line read so far, at most the cap; past the cap only its length is kept. */
class _Carry {
  #bytes = new Uint8Array(0);
  #length = 0;
  #over = false;
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  /**
   * Notes `part` of the current line; when the line ends with it and nothing came before, it is
   * not copied ({@linkcode take} gets it again).
   */
  add(part: Uint8Array, ends: boolean): void {
    if (this.#over) return;
    if (this.#length + part.byteLength > this.#max) {
      this.#over = true;
      this.#bytes = new Uint8Array(0);
      this.#length = 0;
      return;
    }
    if (ends && this.#length === 0) return;
    if (this.#length + part.byteLength > this.#bytes.byteLength) {
      const grown = new Uint8Array(
        Math.min(this.#max, Math.max(this.#length + part.byteLength, this.#bytes.byteLength * 2)),
      );
      grown.set(this.#bytes.subarray(0, this.#length));
      this.#bytes = grown;
    }
    this.#bytes.set(part, this.#length);
    this.#length += part.byteLength;
  }

  /** The whole line (`last`: its final part, when nothing was carried), and a fresh start. */
  take(last: Uint8Array): Uint8Array | undefined {
    const over = this.#over;
    const carried = this.#length > 0;
    const bytes = over ? undefined : carried ? this.#bytes.subarray(0, this.#length) : last;
    this.#over = false;
    this.#length = 0;
    // A carried line's buffer is reused by the next line: the caller reads it before asking.
    return bytes;
  }
}
