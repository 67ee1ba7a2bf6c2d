/**
 * The block list's rules on a fake clock: keys (IPv6 /64, IPv4 exact, IPv4-mapped, exact
 * contact), expiry, lifting by submission and by key, and what an erasure names.
 */
import assert from "node:assert/strict";
import {
  type Block,
  blockableSender,
  BlockList,
  keyOf,
  senderKeys,
  spamBlocks,
  type Unblockable,
  unblockableAddress,
} from "../../lib/spam/block_list.ts";
import { parseCidr } from "../../lib/common/ip.ts";
import { rateLimitKey } from "../../lib/net/rate_limit.ts";

const DAY = 86_400_000;
const T0 = Date.parse("2026-11-22T14:03:09Z");

function marked(id: string, ip: string, contact: string, at = T0, forMs = 30 * DAY): BlockList {
  return new BlockList(spamBlocks({ id, ip, contact }, at, forMs));
}

Deno.test("marking spam blocks the client address key and the exact contact, for the time given", () => {
  const blocks = spamBlocks(
    { id: "s1", ip: "2001:db8:1:2::7", contact: " ann@example.org " },
    T0,
    DAY,
    42,
  );
  assert.deepEqual(blocks, [
    {
      kind: "address",
      value: "2001:db8:1:2::/64",
      since: "2026-11-22T14:03:09Z",
      until: "2026-11-23T14:03:09Z",
      submission: "s1",
      by: 42,
    },
    {
      kind: "contact",
      value: "ann@example.org",
      since: "2026-11-22T14:03:09Z",
      until: "2026-11-23T14:03:09Z",
      submission: "s1",
      by: 42,
    },
  ]);
  assert.equal(blocks[0]!.value, rateLimitKey("2001:db8:1:2::7")); // the rate limiter's key
});

Deno.test("an empty contact makes no contact block", () => {
  assert.deepEqual(senderKeys({ ip: "192.0.2.1", contact: "  " }), [
    { kind: "address", value: "192.0.2.1" },
  ]);
});

Deno.test("any address in a blocked IPv6 /64 is held; the next /64 is not", () => {
  const list = marked("s1", "2001:db8:1:2::7", "");
  assert.equal(list.match({ ip: "2001:db8:1:2:ffff:1:2:3", contact: "x" }, T0)?.submission, "s1");
  assert.equal(list.match({ ip: "2001:DB8:1:2:0:0:0:1", contact: "x" }, T0)?.kind, "address");
  assert.equal(list.match({ ip: "2001:db8:1:3::7", contact: "x" }, T0), undefined);
});

Deno.test("an IPv4 block holds that address only, in its mapped form too", () => {
  const list = marked("s1", "192.0.2.1", "");
  assert.equal(list.match({ ip: "192.0.2.1", contact: "" }, T0)?.submission, "s1");
  assert.equal(list.match({ ip: "::ffff:192.0.2.1", contact: "" }, T0)?.submission, "s1");
  assert.equal(list.match({ ip: "192.0.2.2", contact: "" }, T0), undefined);
  const mapped = marked("s2", "::ffff:198.51.100.9", "");
  assert.equal(mapped.match({ ip: "198.51.100.9", contact: "" }, T0)?.submission, "s2");
});

Deno.test("a blocked contact is held from any address, exactly (trimmed), not by a near match", () => {
  const list = marked("s1", "192.0.2.1", "spam@example.org");
  const held = list.match({ ip: "203.0.113.5", contact: " spam@example.org" }, T0);
  assert.equal(held?.kind, "contact");
  assert.equal(list.match({ ip: "203.0.113.5", contact: "spam@example.org.uk" }, T0), undefined);
  assert.equal(list.match({ ip: "203.0.113.5", contact: "" }, T0), undefined);
});

Deno.test("a block holds until its end and not at it; expired blocks are listed nowhere and dropped", () => {
  const list = marked("s1", "192.0.2.1", "c", T0, 1000 * 60);
  const sender = { ip: "192.0.2.1", contact: "" };
  assert.notEqual(list.match(sender, T0 + 59_999), undefined);
  assert.equal(list.match(sender, T0 + 60_000), undefined);
  assert.equal(list.list(T0 + 60_000).length, 0);
  assert.equal(list.list(T0).length, 2);
  assert.equal(list.dropExpired(T0 + 60_000), 2);
  assert.equal(list.size, 0);
});

Deno.test("not spam lifts that submission's blocks only: a key another submission blocks stays", () => {
  const list = new BlockList([
    ...spamBlocks({ id: "s1", ip: "192.0.2.1", contact: "a" }, T0, DAY),
    ...spamBlocks({ id: "s2", ip: "192.0.2.1", contact: "b" }, T0 + 1000, DAY),
  ]);
  assert.deepEqual(list.lift("s1").map((block) => block.value), ["192.0.2.1", "a"]);
  assert.equal(list.match({ ip: "192.0.2.1", contact: "" }, T0 + 2000)?.submission, "s2");
  assert.equal(list.match({ ip: "203.0.113.1", contact: "a" }, T0 + 2000), undefined);
  assert.equal(list.match({ ip: "203.0.113.1", contact: "b" }, T0 + 2000)?.submission, "s2");
});

Deno.test("the same submission blocking the same key twice makes one block", () => {
  const list = marked("s1", "192.0.2.1", "a");
  for (const block of spamBlocks({ id: "s1", ip: "192.0.2.1", contact: "a" }, T0 + 5, DAY)) {
    assert.equal(list.add(block), false);
  }
  assert.equal(list.size, 2);
});

Deno.test("lifting a key lifts it whichever submissions blocked it, and nothing else", () => {
  const list = new BlockList([
    ...spamBlocks({ id: "s1", ip: "2001:db8::1", contact: "a" }, T0, DAY),
    ...spamBlocks({ id: "s2", ip: "2001:db8::2", contact: "b" }, T0, DAY),
  ]);
  assert.equal(list.liftKey(keyOf("2001:db8::99")).length, 2);
  assert.equal(list.match({ ip: "2001:db8::1", contact: "" }, T0), undefined);
  assert.equal(list.match({ ip: "192.0.2.1", contact: "a" }, T0)?.kind, "contact");
});

Deno.test("unblock's argument: an address of any form is its key, a /64 as listed too, else a contact", () => {
  assert.deepEqual(keyOf("2001:DB8::1"), { kind: "address", value: "2001:db8::/64" });
  assert.deepEqual(keyOf("2001:db8::/64"), { kind: "address", value: "2001:db8::/64" });
  assert.deepEqual(keyOf(" ::ffff:192.0.2.1 "), { kind: "address", value: "192.0.2.1" });
  assert.deepEqual(keyOf("192.0.2.1"), { kind: "address", value: "192.0.2.1" });
  assert.deepEqual(keyOf("192.0.2.01"), { kind: "contact", value: "192.0.2.01" });
  assert.deepEqual(keyOf(" @ann "), { kind: "contact", value: "@ann" });
});

Deno.test("an erasure names every block of the submissions it names, by id, contact (any case) or address", () => {
  const blocks: Block[] = [
    ...spamBlocks({ id: "s1", ip: "2001:db8::1", contact: "Ann@Example.org" }, T0, DAY),
    ...spamBlocks({ id: "s2", ip: "192.0.2.9", contact: "bob" }, T0, DAY),
  ];
  const list = new BlockList(blocks);
  const of = (blocks: Block[]) => blocks.map((block) => `${block.submission}:${block.kind}`);
  assert.deepEqual(of(list.forgotten({ by: "id", value: "s2" })), ["s2:address", "s2:contact"]);
  assert.deepEqual(of(list.forgotten({ by: "contact", value: "ann@example.org" })), [
    "s1:address",
    "s1:contact",
  ]);
  assert.deepEqual(of(list.forgotten({ by: "address", value: "2001:db8::ffff" })), [
    "s1:address",
    "s1:contact",
  ]);
  assert.deepEqual(list.forgotten({ by: "address", value: "192.0.2.10" }), []);
});

Deno.test("retention names the blocks made before the cut", () => {
  const list = new BlockList([
    ...spamBlocks({ id: "old", ip: "192.0.2.1", contact: "" }, T0 - 10 * DAY, 30 * DAY),
    ...spamBlocks({ id: "new", ip: "192.0.2.2", contact: "" }, T0, 30 * DAY),
  ]);
  assert.deepEqual(list.madeBefore(T0 - DAY).map((block) => block.submission), ["old"]);
});

Deno.test("an erasure removes every block of the submissions it found elsewhere, though no key names them", () => {
  const list = new BlockList();
  const now = Date.parse("2026-11-25T10:00:00Z");
  for (const block of spamBlocks({ id: "s1", ip: "203.0.113.7", contact: "+4912345" }, now, DAY)) {
    list.add(block);
  }
  for (
    const block of spamBlocks({ id: "s2", ip: "198.51.100.1", contact: "x@example.org" }, now, DAY)
  ) {
    list.add(block);
  }
  // forget --contact ann@example.org found s1 by a kept field: its blocks go, s2's stay.
  const gone = list.forgotten({ by: "contact", value: "ann@example.org" }, new Set(["s1"]));
  assert.deepEqual(gone.map((block) => `${block.kind}:${block.submission}`).sort(), [
    "address:s1",
    "contact:s1",
  ]);
});

Deno.test("a blocked email contact is held whatever the case of its domain; its local part counts as written", () => {
  const list = new BlockList();
  const now = Date.parse("2026-11-25T10:00:00Z");
  for (
    const block of spamBlocks(
      { id: "s1", ip: "203.0.113.7", contact: "Spammer@Example.org" },
      now,
      DAY,
    )
  ) {
    list.add(block);
  }
  const from = (contact: string) => list.match({ ip: "192.0.2.1", contact }, now)?.kind;
  assert.equal(from("Spammer@EXAMPLE.ORG"), "contact");
  assert.equal(from(" Spammer@example.org "), "contact");
  assert.equal(from("spammer@example.org"), undefined);
  assert.equal(keyOf("Spammer@EXAMPLE.org").value, "Spammer@example.org");
});

Deno.test("decision table: which client addresses a Spam press may block", () => {
  const trusted = [parseCidr("10.8.0.0/16")!, parseCidr("127.0.0.0/8")!];
  const table: [string, Unblockable | undefined][] = [
    ["203.0.113.9", undefined],
    ["2001:db8::7", undefined],
    ["10.9.0.1", undefined],
    ["127.0.0.1", "loopback"],
    ["127.8.8.8", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["10.8.8.8", "trusted_proxy"],
    ["::ffff:10.8.0.1", "trusted_proxy"],
    ["0.0.0.0", "not_an_address"],
    ["::", "not_an_address"],
    ["unknown", "not_an_address"],
    ["", "not_an_address"],
  ];
  for (const [ip, expected] of table) assert.equal(unblockableAddress(ip, trusted), expected, ip);
});

Deno.test("an unblockable address is blanked: a Spam press blocks the contact only, and a check of it looks at the contact only", () => {
  const trusted = [parseCidr("127.0.0.0/8")!];
  const loopback = blockableSender(
    { id: "s1", ip: "127.0.0.1", contact: "spam@example.org" },
    trusted,
  );
  const list = new BlockList(spamBlocks(loopback, T0, 30 * DAY));
  assert.deepEqual(list.all().map((block) => block.kind), ["contact"]);
  // Another sender behind the same proxy is not held; the blocked contact is.
  const other = blockableSender({ ip: "127.0.0.1", contact: "ann@example.org" }, trusted);
  assert.equal(list.match(other, T0 + 1), undefined);
  assert.equal(list.match({ ip: "", contact: "spam@example.org" }, T0 + 1)?.kind, "contact");
  // A real address keeps both keys.
  const real = blockableSender({ id: "s2", ip: "203.0.113.9", contact: "x@example.org" }, trusted);
  assert.deepEqual(spamBlocks(real, T0, DAY).map((block) => block.kind), ["address", "contact"]);
});
