import assert from "node:assert/strict";
import {
  casePath,
  isTokenShape,
  newToken,
  sameHash,
  TOKEN_BYTES,
  tokenHash,
  tokenOfPath,
} from "../../lib/cases/token.ts";

Deno.test("a token is at least 128 random bits, base64url, and each one is new", () => {
  assert.ok(TOKEN_BYTES * 8 >= 128);
  const seen = new Set(Array.from({ length: 200 }, () => newToken()));
  assert.equal(seen.size, 200);
  for (const token of seen) assert.ok(isTokenShape(token), token);
  // Every byte value maps into the URL-safe alphabet (no +, /, =).
  assert.equal(newToken((bytes) => bytes.fill(0xff)), "_".repeat(32));
  assert.equal(newToken((bytes) => bytes.fill(0xfb)), "-_v7".repeat(8));
});

Deno.test("only a token's exact shape is looked up: other paths under /api/case/ name no case", () => {
  const token = newToken();
  assert.equal(tokenOfPath(casePath(token)), token);
  for (
    const path of [
      "/api/case/",
      `/api/case/${token}/`,
      `/api/case/${token}x`,
      `/api/case/${token.slice(1)}`,
      `/api/case/${token.slice(1)}=`,
      `/api/contact/${token}`,
    ]
  ) assert.equal(tokenOfPath(path), undefined, path);
});

Deno.test("the database keeps the SHA-256 of the token, and hashes compare equal only when identical", async () => {
  const hex = (bytes: Uint8Array) =>
    Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  // FIPS 180-2's test vector.
  assert.equal(
    hex(await tokenHash("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  const token = newToken();
  const hash = await tokenHash(token);
  assert.equal(sameHash(hash, await tokenHash(token)), true);
  assert.equal(sameHash(hash, await tokenHash(newToken())), false);
  assert.equal(sameHash(hash, hash.slice(1)), false);
});
