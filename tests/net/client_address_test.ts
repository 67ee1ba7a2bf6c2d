import assert from "node:assert/strict";
import {
  clientAddress,
  isProxyAddress,
  PROXY_NOTICE_INTERVAL_MS,
  ProxyNotice,
} from "../../lib/net/client_address.ts";
import { type Cidr, parseCidr } from "../../lib/common/ip.ts";

function cidrs(...texts: string[]): Cidr[] {
  return texts.map((text) => {
    const cidr = parseCidr(text);
    assert.ok(cidr, text);
    return cidr;
  });
}

const PROXIES = cidrs("127.0.0.0/8", "::1/128", "10.0.0.0/8");

Deno.test("clientAddress ignores forwarding headers from an untrusted peer", () => {
  const headers = new Headers({ "x-real-ip": "6.6.6.6", "x-forwarded-for": "7.7.7.7" });
  assert.equal(clientAddress("203.0.113.5", headers, PROXIES), "203.0.113.5");
  assert.equal(clientAddress("2001:db8::5", headers, PROXIES), "2001:db8::5");
});

Deno.test("clientAddress uses a trusted peer itself when it sends no forwarding header", () => {
  assert.equal(clientAddress("10.0.0.2", new Headers(), PROXIES), "10.0.0.2");
  assert.equal(clientAddress("::1", new Headers({ forwarded: "for=6.6.6.6" }), PROXIES), "::1");
});

Deno.test("clientAddress trusts nobody when the trusted list is empty", () => {
  const headers = new Headers({ "x-real-ip": "6.6.6.6" });
  assert.equal(clientAddress("127.0.0.1", headers, []), "127.0.0.1");
});

Deno.test("clientAddress reports the peer canonically, IPv4-mapped as IPv4", () => {
  const none = new Headers();
  assert.equal(clientAddress("::ffff:203.0.113.5", none, PROXIES), "203.0.113.5");
  assert.equal(clientAddress("2001:DB8:0:0::5", none, PROXIES), "2001:db8::5");
  assert.equal(clientAddress(" 203.0.113.5 ", none, PROXIES), "203.0.113.5");
});

const xff = (value: string, more: Record<string, string> = {}) =>
  new Headers({ "x-forwarded-for": value, ...more });

Deno.test("clientAddress (X-Forwarded-For) takes the entry our proxy appended, not the client's", () => {
  // nginx with only `$proxy_add_x_forwarded_for`: the client wrote everything left of the
  // last entry, and an X-Real-IP of its own passes through untouched.
  const headers = xff("6.6.6.6, 192.0.2.9", { "x-real-ip": "6.6.6.7" });
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "192.0.2.9");
  assert.equal(clientAddress("::1", headers, PROXIES, "x-forwarded-for"), "192.0.2.9");
  // Deno reports IPv4 peers on a dual-stack socket in mapped form.
  assert.equal(clientAddress("::ffff:10.1.2.3", headers, PROXIES), "192.0.2.9");
});

Deno.test("clientAddress (X-Forwarded-For) ignores X-Real-IP, even when it is the only header", () => {
  const headers = new Headers({ "x-real-ip": "198.51.100.7" });
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "127.0.0.1");
});

Deno.test("clientAddress (X-Forwarded-For) skips trusted hops of a proxy chain from the right", () => {
  // client -> proxy 10.0.0.5 -> proxy 10.0.0.6 -> contactd; the client forged two entries.
  const chain = xff("6.6.6.6, 10.0.0.9, 192.0.2.9, 10.0.0.5");
  assert.equal(clientAddress("10.0.0.6", chain, PROXIES), "192.0.2.9");
  // Trusted hops in IPv6 and mapped spellings count as trusted too.
  const mixed = xff("6.6.6.6, 2001:db8::9, ::ffff:10.0.0.5, ::1");
  assert.equal(clientAddress("10.0.0.6", mixed, PROXIES), "2001:db8::9");
  // Repeated header lines arrive joined in order, and are walked as one list.
  const repeated = new Headers();
  repeated.append("x-forwarded-for", "6.6.6.6, 192.0.2.9");
  repeated.append("x-forwarded-for", "10.0.0.5");
  assert.equal(clientAddress("10.0.0.6", repeated, PROXIES), "192.0.2.9");
});

Deno.test("clientAddress (X-Forwarded-For) stops at garbage: the last trusted hop, never an entry left of it", () => {
  assert.equal(clientAddress("127.0.0.1", xff("6.6.6.6, not-an-ip"), PROXIES), "127.0.0.1");
  assert.equal(clientAddress("127.0.0.1", xff("6.6.6.6, unknown, 10.0.0.5"), PROXIES), "10.0.0.5");
  for (const garbage of ["1.2.3.4:5678", "256.0.0.1", "fe80::1%eth0", "1.2.3.4 5", "[::1]:80"]) {
    const headers = xff(`6.6.6.6, ${garbage}, 10.0.0.5, 10.0.0.6`);
    assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "10.0.0.5", garbage);
  }
});

Deno.test("clientAddress (X-Forwarded-For) takes the leftmost entry when every entry is trusted", () => {
  assert.equal(clientAddress("127.0.0.1", xff("10.0.0.9, 10.0.0.5"), PROXIES), "10.0.0.9");
  assert.equal(clientAddress("127.0.0.1", xff("127.0.0.1"), PROXIES), "127.0.0.1");
});

Deno.test("clientAddress (X-Forwarded-For) skips blank entries but not garbage ones", () => {
  const trailing = xff("6.6.6.6,192.0.2.9 , ,\t");
  assert.equal(clientAddress("127.0.0.1", trailing, PROXIES), "192.0.2.9");
  assert.equal(clientAddress("127.0.0.1", xff("6.6.6.6, , 10.0.0.5"), PROXIES), "6.6.6.6");
  assert.equal(clientAddress("127.0.0.1", xff(" , ,, "), PROXIES), "127.0.0.1");
});

Deno.test("clientAddress (X-Real-IP) believes a trusted peer's X-Real-IP and ignores X-Forwarded-For", () => {
  const headers = new Headers({ "x-real-ip": "198.51.100.7", "x-forwarded-for": "192.0.2.9" });
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES, "x-real-ip"), "198.51.100.7");
  assert.equal(clientAddress("::ffff:10.1.2.3", headers, PROXIES, "x-real-ip"), "198.51.100.7");
  const forwardedOnly = xff("192.0.2.9");
  assert.equal(clientAddress("127.0.0.1", forwardedOnly, PROXIES, "x-real-ip"), "127.0.0.1");
  // From an untrusted peer, not even in this mode.
  assert.equal(clientAddress("203.0.113.5", headers, PROXIES, "x-real-ip"), "203.0.113.5");
});

Deno.test("clientAddress (X-Real-IP) falls back to the peer when X-Real-IP is garbage", () => {
  for (const value of ["", "unknown", "1.2.3.4:5678", "256.0.0.1", "fe80::1%eth0", "1.2.3.4 5"]) {
    const headers = new Headers({ "x-real-ip": value, "x-forwarded-for": "192.0.2.9" });
    assert.equal(
      clientAddress("10.0.0.2", headers, PROXIES, "x-real-ip"),
      "10.0.0.2",
      JSON.stringify(value),
    );
  }
});

Deno.test("clientAddress (X-Real-IP) treats duplicate X-Real-IP headers as garbage", () => {
  const headers = new Headers();
  headers.append("x-real-ip", "198.51.100.7");
  headers.append("x-real-ip", "6.6.6.6");
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES, "x-real-ip"), "127.0.0.1");
});

Deno.test("clientAddress canonicalises forwarded addresses in both modes", () => {
  const cases: [string, string][] = [
    ["2001:DB8:0:0:0:0:0:0001", "2001:db8::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
  ];
  for (const [forwarded, expected] of cases) {
    const real = new Headers({ "x-real-ip": forwarded });
    assert.equal(clientAddress("127.0.0.1", real, PROXIES, "x-real-ip"), expected, forwarded);
    assert.equal(clientAddress("127.0.0.1", xff(`6.6.6.6, ${forwarded}`), PROXIES), expected);
  }
});

Deno.test("clientAddress finds the client at the right end of a very long X-Forwarded-For", () => {
  const long = "6.6.6.6, ".repeat(100_000) + "192.0.2.9, 10.0.0.5";
  assert.equal(clientAddress("127.0.0.1", xff(long), PROXIES), "192.0.2.9");
});

Deno.test("clientAddress with TRUSTED_PROXIES=none (direct exposure) reads no header", () => {
  const headers = xff("192.0.2.9", { "x-real-ip": "198.51.100.7" });
  for (const mode of ["x-forwarded-for", "x-real-ip"] as const) {
    assert.equal(clientAddress("127.0.0.1", headers, [], mode), "127.0.0.1");
    assert.equal(clientAddress("203.0.113.5", headers, [], mode), "203.0.113.5");
  }
});

Deno.test("clientAddress answers by the trusted list it is given, not one it saw before", () => {
  // The one-entry memo of the peer must be keyed by the list too.
  const headers = xff("192.0.2.9");
  assert.equal(clientAddress("10.0.0.2", headers, PROXIES), "192.0.2.9");
  assert.equal(clientAddress("10.0.0.2", headers, cidrs("127.0.0.1")), "10.0.0.2");
  assert.equal(clientAddress("10.0.0.2", headers, PROXIES), "192.0.2.9");
});

Deno.test("clientAddress returns an unparsable peer trimmed, or 'unknown' if empty", () => {
  const headers = new Headers({ "x-real-ip": "198.51.100.7" });
  assert.equal(clientAddress(" some-host ", headers, PROXIES), "some-host");
  assert.equal(clientAddress("", headers, PROXIES), "unknown");
  assert.equal(clientAddress(" \t ", headers, PROXIES), "unknown");
  assert.equal(clientAddress(undefined as unknown as string, headers, PROXIES), "unknown");
});

Deno.test("clientAddress never returns an empty string for hostile header values", () => {
  const hostile = ["", " ", ",", "\0", "::", "[]", "%", "a".repeat(100_000), ", , ,"];
  for (const peer of ["127.0.0.1", "203.0.113.5", "", "garbage"]) {
    for (const value of hostile) {
      for (const name of ["x-real-ip", "x-forwarded-for"] as const) {
        const headers = new Headers();
        headers.set(name, value.replace("\0", "")); // Headers itself refuses NUL
        const result = clientAddress(peer, headers, PROXIES, name);
        assert.notEqual(result.trim(), "", `${peer} ${name}=${JSON.stringify(value)}`);
      }
    }
  }
});

Deno.test("a submission that arrives with the proxy's own address is recognised: no header, garbage, or only trusted hops", () => {
  for (
    const [peer, header] of [
      ["127.0.0.1", null],
      ["127.0.0.1", "10.8.8.8:1234"],
      ["127.0.0.1", "fe80::1%eth0"],
      ["127.0.0.1", "010.008.008.008"],
      ["127.0.0.1", "10.0.0.7"],
      ["10.0.0.2", ""],
    ] as const
  ) {
    const headers = new Headers(header === null ? {} : { "x-forwarded-for": header });
    const ip = clientAddress(peer, headers, PROXIES);
    assert.ok(isProxyAddress(ip, PROXIES), `${peer} with ${header}: ${ip}`);
  }
  const forwarded = new Headers({ "x-forwarded-for": "203.0.113.9" });
  assert.ok(!isProxyAddress(clientAddress("127.0.0.1", forwarded, PROXIES), PROXIES));
  assert.ok(!isProxyAddress(clientAddress("203.0.113.5", new Headers(), PROXIES), PROXIES));
});

Deno.test("the proxy's own address is said once at once, then at most once per PROXY_NOTICE_INTERVAL_MS with the count", () => {
  const notice = new ProxyNotice();
  const said: unknown[] = [];
  const note = (ip: string, at: number) => {
    const line = notice.note(ip, PROXIES, "x-forwarded-for", at);
    if (line !== undefined) said.push(line);
  };
  note("203.0.113.9", 0); // a real client: nothing
  assert.equal(said.length, 0);
  note("127.0.0.1", 1000);
  for (let i = 0; i < 99; i++) note("127.0.0.1", 2000 + i);
  assert.equal(said.length, 1, "once, not per request");
  note("127.0.0.1", 1000 + PROXY_NOTICE_INTERVAL_MS);
  assert.equal(said.length, 2);
  const [first, second] = said as Record<string, unknown>[];
  assert.equal(first!.event, "client_address_is_proxy");
  assert.equal(first!.requests, 1);
  assert.equal(second!.requests, 100);
  assert.ok(!JSON.stringify(said).includes("127.0.0.1"), "never the address");
});
