/**
 * The spam block list as a pure model: which client address keys (the rate limiter's: an IPv6
 * /64, an IPv4 address) and which exact contacts are blocked, by which submission marked as
 * spam, until when. Time is a parameter (ms since the epoch); nothing here touches a file.
 *
 * @module
 */
import { canonicalIp, type Cidr, cidrContains, parseCidr, parseIp } from "../common/ip.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { rateLimitKey } from "../net/rate_limit.ts";
import { type ForgetMatch, matches as erasureMatches } from "../storage/erasure.ts";

/** What a block holds: a client address key, or an exact contact. */
export type BlockKind = "address" | "contact";

/** The two kinds, in the order a sender is checked. */
export const BLOCK_KINDS: readonly BlockKind[] = ["address", "contact"];

/** One block: a key, the submission marked as spam that made it, and its time. */
export interface Block {
  readonly kind: BlockKind;
  /** `rateLimitKey(ip)` for an address, the exact contact (trimmed as stored) for a contact. */
  readonly value: string;
  /** When it was made (lib/common/timestamp.ts). */
  readonly since: string;
  /** When it ends on its own (lib/common/timestamp.ts); from then on it holds nothing. */
  readonly until: string;
  /** The id of the submission marked as spam. */
  readonly submission: string;
  /** Who marked it (the Telegram user id), when known. */
  readonly by?: number;
}

/** A key of the list: what one block holds. */
export interface BlockKey {
  readonly kind: BlockKind;
  readonly value: string;
}

/** A sender as a POST shows it: its client address and the contact it gave. */
export interface Sender {
  readonly ip: string;
  readonly contact: string;
}

/** The submission marked as spam: its id, client address and contact. */
export interface SpamSubmission extends Sender {
  readonly id: string;
}

/**
 * A contact as a block key: trimmed, and when it is shaped like an email address its domain in
 * lower case (a domain is never case-sensitive: `Ann@Example.ORG` is `Ann@example.org`'s
 * mailbox). The local part is kept as written.
 */
export function contactKey(contact: string): string {
  const trimmed = contact.trim();
  const at = trimmed.lastIndexOf("@");
  if (at <= 0 || /\s/.test(trimmed)) return trimmed;
  return `${trimmed.slice(0, at)}@${trimmed.slice(at + 1).toLowerCase()}`;
}

/**
 * The keys a sender is checked under, and blocked under when marked as spam: its client address
 * key (when `ip` is an address: `""` stands for one never blocked, see
 * {@linkcode unblockableAddress}), then its contact ({@linkcode contactKey}), when not empty.
 */
export function senderKeys(sender: Sender): BlockKey[] {
  const contact = contactKey(sender.contact);
  const ip = sender.ip.trim();
  const keys: BlockKey[] = parseIp(ip) === null
    ? []
    : [{ kind: "address", value: rateLimitKey(ip) }];
  return contact === "" ? keys : [...keys, { kind: "contact", value: contact }];
}

/**
 * Why a client address is never blocked, nor checked against the block list: `loopback` (this
 * host: a proxy on it, or a local request), `trusted_proxy` (inside `TRUSTED_PROXIES`: the
 * proxy's own address, recorded when it named no client), `not_an_address` (no address was
 * recorded). A block on any of them would hold every sender behind the proxy, not the one.
 */
export type Unblockable = "loopback" | "trusted_proxy" | "not_an_address";

const LOOPBACK: readonly Cidr[] = ["127.0.0.0/8", "::1/128"].map((text) => parseCidr(text)!);

/** Why `ip` must not be blocked ({@linkcode Unblockable}), or `undefined`: it may be. */
export function unblockableAddress(ip: string, trusted: readonly Cidr[]): Unblockable | undefined {
  const parsed = parseIp(ip.trim());
  if (parsed === null || /^(0\.0\.0\.0|::)$/.test(canonicalIp(ip) ?? "")) {
    return "not_an_address";
  }
  if (LOOPBACK.some((cidr) => cidrContains(cidr, parsed))) return "loopback";
  if (trusted.some((cidr) => cidrContains(cidr, parsed))) return "trusted_proxy";
  return undefined;
}

/**
 * The sender as the block list may hold it: its address blanked (`""`: no address key) when it
 * is {@linkcode unblockableAddress}, so a Spam press blocks the contact only, and a submission
 * from the proxy's own address is checked by its contact only.
 */
export function blockableSender<T extends Sender>(sender: T, trusted: readonly Cidr[]): T {
  return unblockableAddress(sender.ip, trusted) === undefined ? sender : { ...sender, ip: "" };
}

/**
 * The key `contactd unblock` means by `text`: an IP address (any written form, IPv4-mapped
 * included) is its client address key (`2001:db8::1` is `2001:db8::/64`); anything else is an
 * exact contact ({@linkcode contactKey}).
 */
export function keyOf(text: string): BlockKey {
  const trimmed = text.trim();
  // A /64 key as `contactd blocked` lists it (`2001:db8::/64`) is an address too.
  const network = trimmed.endsWith("/64") ? canonicalIp(trimmed.slice(0, -3)) : null;
  const ip = network?.includes(":") === true ? network : canonicalIp(trimmed);
  return ip === null
    ? { kind: "contact", value: contactKey(trimmed) }
    : { kind: "address", value: rateLimitKey(ip) };
}

/** The text of a key in a held record and in the CLI's output: `address:<key>`, `contact:<value>`. */
export function keyText(key: BlockKey): string {
  return `${key.kind}:${key.value}`;
}

/**
 * The blocks marking `submission` as spam makes at `now` for `forMs`, by `by`: one per key of
 * {@linkcode senderKeys}.
 */
export function spamBlocks(
  submission: SpamSubmission,
  now: number,
  forMs: number,
  by?: number,
): Block[] {
  const since = formatTimestamp(new Date(now));
  const until = formatTimestamp(new Date(now + forMs));
  return senderKeys(submission).map((key) => ({
    ...key,
    since,
    until,
    submission: submission.id,
    ...(by === undefined ? {} : { by }),
  }));
}

/** Whether `block` still holds at `now` (ms since the epoch). */
export function isLive(block: Block, now: number): boolean {
  return Date.parse(block.until) > now;
}

/** The map key of a block key. */
function _key(kind: BlockKind, value: string): string {
  return `${kind}\u0000${value}`;
}

/**
 * The block list in memory: blocks by key (several submissions may block the same key; each
 * block is lifted on its own). Expired blocks match nothing; {@linkcode BlockList.live} is what
 * a compaction keeps.
 */
export class BlockList {
  readonly #byKey = new Map<string, Block[]>();

  /** A list holding `blocks`. */
  constructor(blocks: Iterable<Block> = []) {
    for (const block of blocks) this.add(block);
  }

  /**
   * Adds `block`; false (nothing changes) when the same submission already blocks the same key
   * (a second press of Spam makes no second block).
   */
  add(block: Block): boolean {
    const key = _key(block.kind, block.value);
    const held = this.#byKey.get(key) ?? [];
    if (held.some((other) => other.submission === block.submission)) return false;
    this.#byKey.set(key, [...held, block]);
    return true;
  }

  /** Removes the blocks `submission` made, and only those; returns them. */
  lift(submission: string): Block[] {
    return this.#remove((block) => block.submission === submission);
  }

  /** Removes every block of `key`, whichever submission made it; returns them. */
  liftKey(key: BlockKey): Block[] {
    const held = this.#byKey.get(_key(key.kind, key.value)) ?? [];
    this.#byKey.delete(_key(key.kind, key.value));
    return held;
  }

  /** Removes the blocks `drop` names; returns them. */
  #remove(drop: (block: Block) => boolean): Block[] {
    const removed: Block[] = [];
    for (const [key, held] of this.#byKey) {
      const kept: Block[] = [];
      for (const block of held) (drop(block) ? removed : kept).push(block);
      if (kept.length === 0) this.#byKey.delete(key);
      else if (kept.length !== held.length) this.#byKey.set(key, kept);
    }
    return removed;
  }

  /**
   * The block that holds `sender` at `now` (its address key first, then its exact contact), or
   * `undefined`. Of several on one key, the one that lasts longest.
   */
  match(sender: Sender, now: number): Block | undefined {
    if (this.#byKey.size === 0) return undefined; // the common case: nothing to parse
    for (const key of senderKeys(sender)) {
      let found: Block | undefined;
      for (const block of this.#byKey.get(_key(key.kind, key.value)) ?? []) {
        if (isLive(block, now) && (found === undefined || block.until > found.until)) {
          found = block;
        }
      }
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** The blocks that hold at `now`, in the order they were made. */
  list(now: number): Block[] {
    return this.all().filter((block) => isLive(block, now)).sort((a, b) =>
      a.since < b.since ? -1 : a.since > b.since ? 1 : 0
    );
  }

  /** Every block kept, expired ones included. */
  all(): Block[] {
    return [...this.#byKey.values()].flat();
  }

  /** How many blocks are kept, expired ones included. */
  get size(): number {
    let size = 0;
    for (const held of this.#byKey.values()) size += held.length;
    return size;
  }

  /** Drops the expired blocks (a compaction's rule); returns how many went. */
  dropExpired(now: number): number {
    return this.#remove((block) => !isLive(block, now)).length;
  }

  /** The blocks made before `cutoff` (ms since the epoch): what retention removes. */
  madeBefore(cutoff: number): Block[] {
    return this.all().filter((block) => Date.parse(block.since) < cutoff);
  }

  /** Removes exactly `blocks` (as {@linkcode BlockList.all} gave them); returns how many went. */
  removeBlocks(blocks: readonly Block[]): number {
    const gone = new Set(blocks);
    return this.#remove((block) => gone.has(block)).length;
  }

  /**
   * The blocks an erasure (`contactd forget`) names: those of the submissions it names. By id,
   * that submission's; by contact, the submissions a contact block of that contact names (case
   * and Unicode form aside, as erasure compares); by address, the submissions whose address key
   * holds that address; and the submissions `ids` (every one the erasure found elsewhere, by a
   * kept field, say). Every block of such a submission goes (its other key is its trace too).
   */
  forgotten(match: ForgetMatch, ids: ReadonlySet<string> = new Set()): Block[] {
    const submissions = new Set<string>(ids);
    if (match.by === "id") submissions.add(match.value);
    for (const block of this.all()) {
      if (_forgetNames(match, block)) submissions.add(block.submission);
    }
    return this.all().filter((block) => submissions.has(block.submission));
  }
}

/** Whether an erasure's `match` names `block` by its key. */
function _forgetNames(match: ForgetMatch, block: Block): boolean {
  switch (match.by) {
    case "id":
      return block.submission === match.value;
    case "contact":
      return block.kind === "contact" && erasureMatches(match, { contact: block.value });
    case "address":
      return block.kind === "address" && rateLimitKey(match.value) === block.value;
  }
}
