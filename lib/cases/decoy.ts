/**
 * Decoy case pages: the `case_url` of a success that opened no case (a honeypot hit, a blocked
 * sender's submission) reads and takes writing like a real case's page, so neither a bot nor a
 * blocked sender learns it was caught, and nothing of theirs is stored or sent.
 *
 * Decided: stateless tokens and a bounded memory, not database rows. A decoy's token is 12
 * random bytes followed by 12 bytes of their tag under the install's decoy key (AES-256 of the
 * nonce as one block) (kept in
 * the database's `meta` as {@linkcode DECOY_KEY}, made the first time), base64url like any
 * token: without the key it cannot be told from a real one (both are 24 bytes that look random),
 * and with it a decoy is known without a row, after a restart too. What its page shows (the
 * sender's own message, what they wrote back) is kept in memory only, for at most
 * {@linkcode DECOY_LIMITS} (pages and characters), the oldest forgotten first; a decoy whose
 * text is forgotten still reads as a page, with no messages. A row per decoy would let a flood
 * of bots (many addresses, each within its rate limit) fill the disk with synced writes until
 * `RETENTION`; here a flood costs a bounded memory and no write.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { type Cipheriv, createCipheriv, timingSafeEqual } from "node:crypto";
import type { Store } from "../storage/store.ts";
import type { PagePost } from "./page.ts";
import { isTokenShape, TOKEN_BYTES, tokenBytes, tokenText } from "./token.ts";
import { waitsForReply } from "./waiting.ts";

/** The `meta` key of the install's decoy key (32 random bytes, hex). */
export const DECOY_KEY = "case_decoy_key";

/**
 * Whose decoy a page is: a honeypot hit's (a bot's, before any challenge, so cheap to make) or a
 * `blocked` sender's. Each kind has its own memory of {@linkcode DECOY_LIMITS}, so a cheap flood
 * of honeypot hits cannot push a blocked sender's page out.
 */
export type DecoyKind = "honeypot" | "blocked";

/**
 * What the decoys' pages show, at most, in memory, per {@linkcode DecoyKind}: pages, and
 * characters (UTF-16) in all. A page takes at most `MAX_UNANSWERED` posts, as a real one does.
 */
export const DECOY_LIMITS: Readonly<{ pages: number; chars: number }> = Object.freeze({
  pages: 1_000,
  chars: 1_000_000,
});

/** Random bytes at the start of a decoy's token; the rest is their tag, cut. */
const NONCE_BYTES = 12;
const KEY_BYTES = 32;
/** AES's block: the nonce, padded with zeros, is the one block its tag is enciphered from. */
const BLOCK_BYTES = 16;
const TAG_BYTES = TOKEN_BYTES - NONCE_BYTES;
/** Tokens made per call to the cipher. */
const _BATCH = 64;

/** One kind's decoy pages: their posts by token, oldest page first, and their characters. */
interface _Memory {
  readonly shown: Map<string, PagePost[]>;
  chars: number;
}

/** Decoy tokens under one key, and what their pages show. */
export class DecoyPages {
  /** AES-256 in ECB under the decoy key, without padding: each 16-byte update is one block. */
  readonly #cipher: Cipheriv;
  readonly #fill: (bytes: Uint8Array) => Uint8Array;
  readonly #limits: Readonly<{ pages: number; chars: number }>;
  /** Each kind's memory: each page's posts, by token, oldest page first. */
  readonly #memories: Readonly<Record<DecoyKind, _Memory>> = {
    honeypot: { shown: new Map(), chars: 0 },
    blocked: { shown: new Map(), chars: 0 },
  };
  /** Tokens made ahead, {@linkcode _BATCH} at a time. */
  readonly #ready: string[] = [];

  /** `fill` makes the tokens' random bytes (default `crypto.getRandomValues`). */
  constructor(
    key: Uint8Array,
    fill: (bytes: Uint8Array) => Uint8Array = (bytes) => crypto.getRandomValues(bytes),
    limits: Readonly<{ pages: number; chars: number }> = DECOY_LIMITS,
  ) {
    this.#cipher = createCipheriv("aes-256-ecb", key, null).setAutoPadding(false);
    this.#fill = fill;
    this.#limits = limits;
  }

  /**
   * A new decoy's token, of `kind`'s memory; its page shows `first` (the sender's message) when
   * given.
   */
  issue(first?: { ts: string; text: string }, kind: DecoyKind = "honeypot"): string {
    if (this.#ready.length === 0) this.#refill();
    const token = this.#ready.pop()!;
    if (first !== undefined) this.#show(this.#memories[kind], token, [], first);
    return token;
  }

  /** Makes {@linkcode _BATCH} tokens at once: a honeypot flood's hits share the cipher's call. */
  #refill(): void {
    const nonces = this.#fill(new Uint8Array(_BATCH * NONCE_BYTES));
    for (const bytes of this.#tokens(nonces)) this.#ready.push(tokenText(bytes));
  }

  /** True when `token` is a decoy's: its tag is its nonce's, compared in constant time. */
  isDecoy(token: string): boolean {
    if (!isTokenShape(token)) return false;
    const bytes = tokenBytes(token);
    const [made] = this.#tokens(bytes.subarray(0, NONCE_BYTES));
    return timingSafeEqual(made!.subarray(NONCE_BYTES), bytes.subarray(NONCE_BYTES));
  }

  /** What the page of decoy `token` shows: none once forgotten. */
  posts(token: string): readonly PagePost[] {
    return this.#memoryOf(token)?.shown.get(token) ?? [];
  }

  /**
   * Shows `post` (the sender's) on the page of decoy `token`, as a real page takes it: `false`
   * (not shown) once the page has `MAX_UNANSWERED` posts (lib/cases/waiting.ts). A page forgotten
   * meanwhile starts again in the honeypot hits' memory. The oldest pages over the limits go.
   */
  add(token: string, post: { ts: string; text: string }): boolean {
    const memory = this.#memoryOf(token) ?? this.#memories.honeypot;
    const posts = memory.shown.get(token) ?? [];
    if (waitsForReply(posts)) return false;
    this.#show(memory, token, posts, post);
    return true;
  }

  #memoryOf(token: string): _Memory | undefined {
    const { honeypot, blocked } = this.#memories;
    return honeypot.shown.has(token) ? honeypot : blocked.shown.has(token) ? blocked : undefined;
  }

  #show(memory: _Memory, token: string, posts: PagePost[], post: { ts: string; text: string }) {
    posts.push({ ts: post.ts, author: "sender", text: post.text });
    memory.shown.delete(token); // the newest page last
    memory.shown.set(token, posts);
    memory.chars += post.text.length;
    for (const [oldest, gone] of memory.shown) {
      if (memory.shown.size <= this.#limits.pages && memory.chars <= this.#limits.chars) break;
      memory.shown.delete(oldest);
      memory.chars -= gone.reduce((sum, { text }) => sum + text.length, 0);
    }
  }

  /**
   * The tokens of `nonces` (12 bytes each), one cipher call for all: each nonce and its tag, the
   * first bytes of AES-256 (the decoy key) of the nonce padded to one block. One block enciphered under a secret key is a pseudorandom function of it (as a MAC
   * of one fixed-length block); with one cipher kept and tokens made 64 at a time, a honeypot
   * hit pays well under a µs for it, where HMAC-SHA-256 cost some 10 µs per hit
   * (`bench/validation_bench.ts`).
   */
  #tokens(nonces: Uint8Array): Uint8Array[] {
    const count = nonces.length / NONCE_BYTES;
    const blocks = new Uint8Array(count * BLOCK_BYTES);
    for (let i = 0; i < count; i++) {
      blocks.set(nonces.subarray(i * NONCE_BYTES, (i + 1) * NONCE_BYTES), i * BLOCK_BYTES);
    }
    const tags = this.#cipher.update(blocks);
    return Array.from({ length: count }, (_, i) => {
      const bytes = new Uint8Array(TOKEN_BYTES);
      bytes.set(nonces.subarray(i * NONCE_BYTES, (i + 1) * NONCE_BYTES));
      bytes.set(tags.subarray(i * BLOCK_BYTES, i * BLOCK_BYTES + TAG_BYTES), NONCE_BYTES);
      return bytes;
    });
  }
}

/**
 * The install's decoy key, read from the store's `meta`; made (`fill`: random bytes) and kept
 * there the first time, or when what is there is not a key.
 */
export async function decoyKey(
  store: Pick<Store, "run">,
  fill: (bytes: Uint8Array) => Uint8Array = (bytes) => crypto.getRandomValues(bytes),
): Promise<Uint8Array> {
  const kept = await store.run("meta.get", { key: DECOY_KEY });
  if (kept !== undefined && new RegExp(`^[0-9a-f]{${2 * KEY_BYTES}}$`).test(kept)) {
    return new Uint8Array(Buffer.from(kept, "hex"));
  }
  const key = fill(new Uint8Array(KEY_BYTES));
  await store.run("meta.set", { key: DECOY_KEY, value: Buffer.from(key).toString("hex") });
  return key;
}
