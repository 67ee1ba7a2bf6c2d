/**
 * A case's token: 192 random bits (`crypto.getRandomValues`), base64url, the only key to its page
 * at `/api/case/<token>`. The database keeps only its SHA-256 hash: a case is looked up by the
 * hash and the hash read back is compared with the one computed in constant time, so neither a
 * copy of the database nor the timing of a lookup gives a working token.
 *
 * @module
 */
import { timingSafeEqual } from "node:crypto";

/** Random bytes in a token (192 bits, above the 128 the issue asks for). */
export const TOKEN_BYTES = 24;

/** The route of case pages, the token following it. */
export const CASE_PREFIX = "/api/case/";

/** A token's text: base64url without padding, exactly as {@linkcode newToken} makes one. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{32}$/;

/** A new token; `fill` is `crypto.getRandomValues` (a test passes its own). */
export function newToken(
  fill: (bytes: Uint8Array) => Uint8Array = (bytes) => crypto.getRandomValues(bytes),
): string {
  return tokenText(fill(new Uint8Array(TOKEN_BYTES)));
}

/** A token's text for its {@linkcode TOKEN_BYTES} bytes: base64url without padding. */
export function tokenText(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** The bytes of a token of {@linkcode isTokenShape}'s shape (the inverse of {@linkcode tokenText}). */
export function tokenBytes(token: string): Uint8Array {
  const binary = atob(token.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/** True when `text` has a token's shape (checked before anything is hashed or looked up). */
export function isTokenShape(text: string): boolean {
  return TOKEN_SHAPE.test(text);
}

/** The SHA-256 hash of `token`, as the database keeps it. */
export async function tokenHash(token: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
}

/** True when the two hashes are equal, compared in constant time. */
export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The page's path for `token` (the JSON answer's `case_url`). */
export function casePath(token: string): string {
  return `${CASE_PREFIX}${token}`;
}

/** The token named by a case page's `path`, when it has a token's shape; else `undefined`. */
export function tokenOfPath(path: string): string | undefined {
  if (!path.startsWith(CASE_PREFIX)) return undefined;
  const token = path.slice(CASE_PREFIX.length);
  return isTokenShape(token) ? token : undefined;
}
