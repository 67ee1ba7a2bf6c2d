/**
 * Short ids for submissions: shown in the notification, the log and `contactd pending`, so the
 * owner can match a message to its record.
 *
 * @module
 */

// Crockford's base 32, lower case: no i, l, o or u to misread.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

/** Eight characters, 40 random bits: `k3x9q2ab`. `fill` defaults to `crypto.getRandomValues`. */
export function newSubmissionId(
  fill: (bytes: Uint8Array) => Uint8Array = (bytes) => crypto.getRandomValues(bytes),
): string {
  const bytes = fill(new Uint8Array(5));
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let id = "";
  for (let i = 0; i < 8; i++) {
    id = ALPHABET[Number(bits & 31n)] + id;
    bits >>= 5n;
  }
  return id;
}

/** True for text shaped like an id from {@linkcode newSubmissionId}. */
export function isSubmissionId(text: string): boolean {
  return /^[0-9a-hjkmnp-tv-z]{8}$/.test(text);
}
