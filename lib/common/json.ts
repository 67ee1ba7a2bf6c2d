/**
 * Untrusted JSON: strict UTF-8 decoding and parsing, and the one test for a JSON object.
 *
 * @module
 */

/** Outcome of {@linkcode decodeJson}. */
export type JsonResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly code: "invalid_encoding" | "invalid_json" };

// Deno's lossy decoder is three times faster than its fatal one; invalid input always leaves a
// U+FFFD behind, so only text containing one is decoded again, strictly, to tell the two apart.
const lossy = new TextDecoder("utf-8");
const strict = new TextDecoder("utf-8", { fatal: true });

/** Decodes UTF-8 (strictly) and parses JSON; never throws. */
export function decodeJson(bytes: Uint8Array): JsonResult {
  let text = lossy.decode(bytes);
  if (text.includes("\uFFFD")) {
    try {
      text = strict.decode(bytes);
    } catch {
      return { ok: false, code: "invalid_encoding" };
    }
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    // Also covers RangeError from absurd nesting: a 400, not a crash.
    return { ok: false, code: "invalid_json" };
  }
}

/** True for a JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The value of a JSON text, or `undefined` when it is not JSON (JSON has no `undefined`, so it
 * can only mean that); never throws. For contactd's own files read back.
 */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
