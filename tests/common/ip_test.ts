import assert from "node:assert/strict";
import {
  cidrContains,
  formatIp,
  type IpAddress,
  isCanonicalIpv4,
  parseCidr,
  parseIp,
} from "../../lib/common/ip.ts";
import { mulberry32 as random } from "../support/random.ts";

function canonical(text: string): string | null {
  const ip = parseIp(text);
  return ip === null ? null : formatIp(ip);
}

function ip(text: string): IpAddress {
  const parsed = parseIp(text);
  assert.ok(parsed, `expected ${JSON.stringify(text)} to parse`);
  return parsed;
}

Deno.test("parseIp accepts IPv4 dotted quads and trims surrounding whitespace", () => {
  assert.deepEqual(parseIp("192.0.2.1"), { version: 4, bytes: new Uint8Array([192, 0, 2, 1]) });
  assert.equal(canonical("0.0.0.0"), "0.0.0.0");
  assert.equal(canonical("255.255.255.255"), "255.255.255.255");
  assert.equal(canonical(" \t10.0.0.1\r\n"), "10.0.0.1");
});

Deno.test("parseIp rejects ambiguous and malformed IPv4", () => {
  const bad = [
    "010.0.0.1", // leading zero: octal to some parsers
    "1.2.3.00",
    "0x7f.0.0.1",
    "127.1",
    "2130706433",
    "1.2.3",
    "1.2.3.4.5",
    "256.1.1.1",
    "1.2.3.1000",
    "1..2.3",
    "1.2.3.4.",
    ".1.2.3.4",
    "+1.2.3.4",
    "1.2.3.-4",
    "1.2.3.4 5",
    "１.2.3.4", // fullwidth digit
    "1.2.3.4:80",
    "1.2.3.4/32",
  ];
  for (const text of bad) assert.equal(parseIp(text), null, JSON.stringify(text));
});

Deno.test("formatIp writes IPv6 per RFC 5952", () => {
  const table: [string, string][] = [
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"], // equal runs: the first is compressed
    ["2001:0:0:1:0:0:0:1", "2001:0:0:1::1"], // the longest run wins
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"], // a lone zero stays
    ["0:0:0:0:0:0:0:0", "::"],
    ["::", "::"],
    ["::1", "::1"],
    ["1::", "1::"],
    ["1:0:0:0:0:0:0:0", "1::"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
    ["FE80::1", "fe80::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    [" [::1] ", "::1"],
    ["::1.2.3.4", "::102:304"], // deprecated IPv4-compatible form is not mapped
    ["64:ff9b::192.0.2.33", "64:ff9b::c000:221"],
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"],
  ];
  for (const [input, expected] of table) assert.equal(canonical(input), expected, input);
});

Deno.test("parseIp returns IPv4-mapped IPv6 as IPv4", () => {
  for (
    const text of [
      "::ffff:1.2.3.4",
      "::FFFF:0102:0304",
      "[::ffff:1.2.3.4]",
      "0:0:0:0:0:ffff:1.2.3.4",
    ]
  ) {
    assert.deepEqual(parseIp(text), { version: 4, bytes: new Uint8Array([1, 2, 3, 4]) }, text);
  }
  assert.equal(ip("::fffe:1.2.3.4").version, 6);
});

Deno.test("formatIp keeps the dotted tail of a mapped address built by hand", () => {
  const bytes = new Uint8Array(16);
  bytes.set([0xff, 0xff, 127, 0, 0, 1], 10);
  assert.equal(formatIp({ version: 6, bytes }), "::ffff:127.0.0.1");
});

Deno.test("parseIp rejects malformed IPv6, zone ids and ports", () => {
  const bad = [
    ":::",
    "1::2::3",
    "::1::",
    ":1::",
    "1::2:",
    ":1:2:3:4:5:6:7",
    "1:2:3:4:5:6:7",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7:8::",
    "::1:2:3:4:5:6:7:8",
    "12345::",
    "g::1",
    "fe80::1%eth0",
    "fe80::1%1",
    "[::1]:80",
    "::ffff:1.2.3.4:80",
    "[1.2.3.4]",
    "[::1",
    "::1]",
    "[]",
    "1.2.3.4::",
    "1.2.3.4::1",
    "::1.2.3",
    "::256.0.0.1",
    "::ffff:010.1.1.1",
    "::1/128",
  ];
  for (const text of bad) assert.equal(parseIp(text), null, JSON.stringify(text));
});

Deno.test("parseIp rejects empty, control-character and over-long input", () => {
  const bad = [
    "",
    "   ",
    "\0",
    "1.2.3.4\0",
    "\x001.2.3.4",
    "::1\0",
    "localhost",
    "1".repeat(1_000_000),
    ":".repeat(1_000_000),
    "1.2.3.4" + " ".repeat(100), // padding counts towards the 64-character cap
  ];
  for (const text of bad) assert.equal(parseIp(text), null, JSON.stringify(text.slice(0, 20)));
  assert.equal(parseIp(undefined as unknown as string), null);
});

Deno.test("parseIp never throws and everything it accepts round-trips through formatIp", () => {
  const next = random(1);
  const alphabet = "0123456789abcdefABCDEF:.[]%/ \0x-";
  let accepted = 0;
  for (let n = 0; n < 20_000; n++) {
    let text = "";
    const length = Math.floor(next() * 24);
    for (let i = 0; i < length; i++) text += alphabet[Math.floor(next() * alphabet.length)];
    const parsed = parseIp(text);
    if (parsed === null) continue;
    accepted++;
    assert.deepEqual(parseIp(formatIp(parsed)), parsed, text);
  }
  assert.ok(accepted > 0, "the generator should produce some valid addresses");
});

Deno.test("formatIp output parses back to the same bytes", () => {
  const next = random(2);
  for (let n = 0; n < 5_000; n++) {
    const bytes = new Uint8Array(16);
    // Mostly zero bytes, so that zero runs of every length and position occur.
    for (let i = 0; i < 16; i++) bytes[i] = next() < 0.6 ? 0 : Math.floor(next() * 256);
    const text = formatIp({ version: 6, bytes });
    const back = ip(text);
    const expected = back.version === 4 ? bytes.subarray(12) : bytes;
    assert.deepEqual(back.bytes, expected, text);
    assert.equal(formatIp(back), back.version === 4 ? text.slice("::ffff:".length) : text);
  }
});

Deno.test("formatIp refuses a byte array of the wrong length", () => {
  assert.throws(() => formatIp({ version: 4, bytes: new Uint8Array(16) }), RangeError);
  assert.throws(() => formatIp({ version: 6, bytes: new Uint8Array(4) }), RangeError);
});

Deno.test("parseCidr reads networks and bare host addresses", () => {
  const table: [string, 4 | 6, string, number][] = [
    ["10.0.0.0/8", 4, "10.0.0.0", 8],
    ["10.1.2.3/8", 4, "10.0.0.0", 8], // host bits are cleared
    ["192.168.1.255/23", 4, "192.168.0.0", 23],
    ["127.0.0.1", 4, "127.0.0.1", 32],
    ["0.0.0.0/0", 4, "0.0.0.0", 0],
    ["::1/128", 6, "::1", 128],
    ["::1", 6, "::1", 128],
    ["::/0", 6, "::", 0],
    ["2001:db8:ffff::1/32", 6, "2001:db8::", 32],
    ["[2001:db8::]/48", 6, "2001:db8::", 48],
    ["::ffff:127.0.0.0/104", 4, "127.0.0.0", 8],
    ["::ffff:10.0.0.1", 4, "10.0.0.1", 32],
    ["::ffff:0:0/96", 4, "0.0.0.0", 0],
    ["::ffff:0:0/95", 6, "::fffe:0:0", 95],
    [" 10.0.0.0/8\n", 4, "10.0.0.0", 8],
  ];
  for (const [text, version, address, prefix] of table) {
    const cidr = parseCidr(text);
    assert.ok(cidr, text);
    assert.deepEqual(
      { version: cidr.version, address: formatIp(cidr), prefix: cidr.prefix },
      { version, address, prefix },
      text,
    );
  }
});

Deno.test("parseCidr rejects malformed prefixes and addresses", () => {
  const bad = [
    "",
    "/8",
    "10.0.0.0/",
    "10.0.0.0/33",
    "::/129",
    "10.0.0.0/08",
    "10.0.0.0/-1",
    "10.0.0.0/+8",
    "10.0.0.0/8/8",
    "10.0.0.0 /8",
    "10.0.0.0/ 8",
    "10.0.0.0/8a",
    "10.0.0/8",
    "fe80::%eth0/64",
    "garbage",
    "10.0.0.0/" + "1".repeat(1_000_000),
  ];
  for (const text of bad) assert.equal(parseCidr(text), null, JSON.stringify(text.slice(0, 20)));
});

Deno.test("cidrContains matches exactly the addresses under the prefix", () => {
  const cases: [string, string, boolean][] = [
    ["10.0.0.0/8", "10.0.0.0", true],
    ["10.0.0.0/8", "10.255.255.255", true],
    ["10.0.0.0/8", "11.0.0.0", false],
    ["10.0.0.0/8", "9.255.255.255", false],
    ["192.168.0.0/23", "192.168.1.255", true],
    ["192.168.0.0/23", "192.168.2.0", false],
    ["127.0.0.1", "127.0.0.1", true],
    ["127.0.0.1", "127.0.0.2", false],
    ["0.0.0.0/0", "203.0.113.9", true],
    ["0.0.0.0/0", "2001:db8::1", false],
    ["2001:db8::/32", "2001:db8:ffff::1", true],
    ["2001:db8::/32", "2001:db9::1", false],
    ["2001:db8::/33", "2001:db8:7fff::1", true],
    ["2001:db8::/33", "2001:db8:8000::1", false],
    ["::1/128", "::1", true],
    ["::1/128", "127.0.0.1", false],
    ["10.0.0.0/8", "::a00:1", false], // IPv4-compatible, not mapped
    ["::ffff:127.0.0.0/104", "::ffff:127.0.0.1", true],
    ["::ffff:127.0.0.0/104", "127.9.9.9", true],
    ["127.0.0.0/8", "::ffff:127.0.0.1", true],
    ["::/0", "2001:db8::1", true],
    ["::/0", "192.0.2.1", true], // the mapped range lies inside ::/0
    ["::/1", "192.0.2.1", true],
    ["8000::/1", "192.0.2.1", false],
  ];
  for (const [network, address, expected] of cases) {
    const cidr = parseCidr(network);
    assert.ok(cidr, network);
    assert.equal(cidrContains(cidr, ip(address)), expected, `${network} ∋ ${address}`);
  }
});

Deno.test("cidrContains is false for a hand-built CIDR with an impossible prefix", () => {
  const bytes = new Uint8Array(4);
  assert.equal(cidrContains({ version: 4, bytes, prefix: 33 }, ip("0.0.0.0")), false);
  assert.equal(cidrContains({ version: 4, bytes, prefix: -1 }, ip("0.0.0.0")), false);
  assert.equal(cidrContains({ version: 4, bytes, prefix: 0 }, ip("0.0.0.0")), true);
});

Deno.test("cidrContains is false when either side has the wrong number of bytes", () => {
  const any = { version: 4, bytes: new Uint8Array(4), prefix: 0 } as const;
  assert.equal(cidrContains(any, { version: 4, bytes: new Uint8Array(16) }), false);
  assert.equal(cidrContains({ ...any, bytes: new Uint8Array(5) }, ip("0.0.0.0")), false);
  assert.equal(cidrContains({ version: 6, bytes: new Uint8Array(4), prefix: 0 }, ip("::")), false);
});

Deno.test("isCanonicalIpv4 is true exactly when the text parses and formats to itself", () => {
  const next = random(0x1b4);
  const pick = (chars: string) => chars[Math.floor(next() * chars.length)]!;
  const samples = [
    "0.0.0.0",
    "255.255.255.255",
    "256.1.1.1",
    "01.2.3.4",
    "1.2.3",
    "1.2.3.4.",
    ".1.2.3.4",
    "1..2.3",
    "1.2.3.4 ",
    " 1.2.3.4",
    "1.2.3.04",
    "1.2.3.4444",
    "१.२.३.४", // other digits are not digits here
    "::ffff:1.2.3.4",
  ];
  for (let i = 0; i < 20_000; i++) {
    let text = "";
    const length = 1 + Math.floor(next() * 16);
    for (let j = 0; j < length; j++) text += pick("0123456789....2551 x:");
    samples.push(text);
    // Near misses of real addresses: octets up to 299, sometimes zero-padded.
    const octet = () => `${next() < 0.1 ? "0" : ""}${Math.floor(next() * 300)}`;
    samples.push([octet(), octet(), octet(), octet()].join("."));
  }
  for (const text of samples) {
    const ip = parseIp(text);
    const expected = ip !== null && ip.version === 4 && formatIp(ip) === text;
    assert.equal(isCanonicalIpv4(text), expected, JSON.stringify(text));
  }
});
