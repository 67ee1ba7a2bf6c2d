import assert from "node:assert/strict";
import { clientAddress } from "../lib/client_address.ts";
import { type Cidr, parseCidr } from "../lib/ip.ts";

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

Deno.test("clientAddress uses X-Real-IP from a trusted peer", () => {
  const headers = new Headers({ "x-real-ip": "198.51.100.7" });
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "198.51.100.7");
  assert.equal(clientAddress("::1", headers, PROXIES), "198.51.100.7");
  // Deno reports IPv4 peers on a dual-stack socket in mapped form.
  assert.equal(clientAddress("::ffff:10.1.2.3", headers, PROXIES), "198.51.100.7");
});

Deno.test("clientAddress prefers X-Real-IP over X-Forwarded-For", () => {
  const headers = new Headers({ "x-real-ip": "198.51.100.7", "x-forwarded-for": "192.0.2.9" });
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "198.51.100.7");
});

Deno.test("clientAddress uses the rightmost X-Forwarded-For entry from a trusted peer", () => {
  // Entries left of the one our proxy appended were written by the client.
  const headers = new Headers({ "x-forwarded-for": "6.6.6.6, 192.0.2.9" });
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "192.0.2.9");
});

Deno.test("clientAddress skips empty X-Forwarded-For entries but not garbage ones", () => {
  const trailing = new Headers({ "x-forwarded-for": "6.6.6.6,192.0.2.9 , ,\t" });
  assert.equal(clientAddress("127.0.0.1", trailing, PROXIES), "192.0.2.9");
  // A garbage rightmost entry must not let an older, client-written entry through.
  const garbage = new Headers({ "x-forwarded-for": "6.6.6.6, not-an-ip" });
  assert.equal(clientAddress("127.0.0.1", garbage, PROXIES), "127.0.0.1");
  const blank = new Headers({ "x-forwarded-for": " , ,, " });
  assert.equal(clientAddress("127.0.0.1", blank, PROXIES), "127.0.0.1");
});

Deno.test("clientAddress falls back to the peer when a trusted X-Real-IP is garbage", () => {
  const xff = "192.0.2.9";
  for (const value of ["", "unknown", "1.2.3.4:5678", "256.0.0.1", "fe80::1%eth0", "1.2.3.4 5"]) {
    const headers = new Headers({ "x-real-ip": value, "x-forwarded-for": xff });
    assert.equal(clientAddress("10.0.0.2", headers, PROXIES), "10.0.0.2", JSON.stringify(value));
  }
});

Deno.test("clientAddress treats duplicate X-Real-IP headers as garbage", () => {
  const headers = new Headers();
  headers.append("x-real-ip", "198.51.100.7");
  headers.append("x-real-ip", "6.6.6.6");
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "127.0.0.1");
});

Deno.test("clientAddress canonicalises forwarded addresses", () => {
  const cases: [string, string][] = [
    ["2001:DB8:0:0:0:0:0:0001", "2001:db8::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
  ];
  for (const [forwarded, expected] of cases) {
    const real = new Headers({ "x-real-ip": forwarded });
    assert.equal(clientAddress("127.0.0.1", real, PROXIES), expected, forwarded);
    const xff = new Headers({ "x-forwarded-for": `6.6.6.6, ${forwarded}` });
    assert.equal(clientAddress("127.0.0.1", xff, PROXIES), expected, forwarded);
  }
});

Deno.test("clientAddress finds the rightmost entry of a very long X-Forwarded-For", () => {
  const long = "6.6.6.6, ".repeat(100_000) + "192.0.2.9";
  const headers = new Headers({ "x-forwarded-for": long });
  assert.equal(clientAddress("127.0.0.1", headers, PROXIES), "192.0.2.9");
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
      for (const name of ["x-real-ip", "x-forwarded-for"]) {
        const headers = new Headers();
        headers.set(name, value.replace("\0", "")); // Headers itself refuses NUL
        const result = clientAddress(peer, headers, PROXIES);
        assert.notEqual(result.trim(), "", `${peer} ${name}=${JSON.stringify(value)}`);
      }
    }
  }
});
