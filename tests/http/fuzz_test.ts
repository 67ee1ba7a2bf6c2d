/**
 * Seeded property test: thousands of generated requests against the pure handler. Every answer
 * is a documented status with a JSON body, nothing throws, and only valid bodies notify and
 * record. Reproduce a failure with `FUZZ_SEED=<seed> deno task test`.
 */
import assert from "node:assert/strict";
import { ERRORS } from "../../lib/http/errors.ts";
import { fakeHandler, PROXY } from "../support/fake_handler.ts";
import { mulberry32 as prng } from "../support/random.ts";

const SEED = Number(Deno.env.get("FUZZ_SEED") ?? 20261122) >>> 0;
const RUNS = 4000;

type Random = ReturnType<typeof prng>;
const pick = <T>(random: Random, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)]!;
const int = (random: Random, max: number) => Math.floor(random() * (max + 1));

// Pieces of text that have broken parsers, terminals and chat clients.
const ATOMS = [
  "a",
  "Z",
  "0",
  " ",
  "\t",
  "\n",
  "\r\n",
  "\0",
  "\x1b[31m",
  "\x7f",
  "\u0085",
  "\u2028",
  "\u202e",
  "\u2066",
  "\u200f",
  "\ufeff",
  "\ufffd",
  "\ud800",
  "\udc00",
  "\u{1f600}",
  "\u0301",
  "é",
  "日本",
  '"',
  "\\",
  "/",
  "<b>",
  "*_`[]",
  "%00",
  "{}",
  "__proto__",
  "\uffff",
];
const KEYS = ["name", "contact", "message", "website", "__proto__", "constructor", "x", ""];

function text(random: Random, max: number): string {
  let out = "";
  for (let n = int(random, max); n > 0; n--) out += pick(random, ATOMS);
  return out;
}

function value(random: Random, depth: number): unknown {
  switch (int(random, depth > 3 ? 4 : 6)) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return pick(random, [0, -1, 1e308, -0, 2 ** 53 + 1, 0.1, 123456789]);
    case 3:
    case 4:
      return text(random, 12);
    case 5:
      return Array.from({ length: int(random, 3) }, () => value(random, depth + 1));
    default:
      return Object.fromEntries(
        Array.from(
          { length: int(random, 4) },
          () => [pick(random, KEYS), value(random, depth + 1)],
        ),
      );
  }
}

/** A value an extra field may hold: null, a boolean, a number, a string, or a list of them. */
function fieldValue(random: Random): unknown {
  const scalar = () => random() < 0.5 ? text(random, 12) : value(random, 4);
  return random() < 0.2 ? Array.from({ length: int(random, 3) }, scalar) : scalar();
}

/** A message with at least one visible character, within the limit before cleaning. */
const visible = (random: Random, max: number) => "m" + text(random, max);

type Expect = "valid" | "honeypot" | "invalid" | "unknown";

/** One generated request: its body, its content type, and what it is by construction. */
function generate(
  random: Random,
): { body: string | Uint8Array<ArrayBuffer>; type: string; expect: Expect } {
  const type = random() < 0.9
    ? "application/json"
    : pick(random, ["text/plain", "", "application/jsonp"]);
  const wrongType = type !== "application/json";
  // An extra field the rules keep (lib/form/fields.ts): a scalar, or a list of them.
  const extra = random() < 0.3 ? { x: fieldValue(random) } : {};
  const blank = pick(random, [undefined, null, "", "  \t"]);
  const website = blank === undefined ? {} : { website: blank };
  const kind = int(random, 5);
  let body: string | Uint8Array<ArrayBuffer>;
  let expect: Expect;
  if (kind === 0) {
    const fields = { name: text(random, 40), contact: random() < 0.5 ? null : text(random, 40) };
    body = JSON.stringify({ ...extra, ...fields, ...website, message: visible(random, 200) });
    expect = "valid";
  } else if (kind === 1) {
    const trap = pick(random, ["x", " http://spam ", 1, true, false, [], {}, 0]);
    body = JSON.stringify({ message: text(random, 4000), name: value(random, 0), website: trap });
    expect = "honeypot";
  } else if (kind === 2) {
    const bad = pick(random, [1, true, [], {}, "", " \n\t ", "a".repeat(4001)]);
    body = JSON.stringify({ ...extra, ...website, name: text(random, 5), message: bad });
    expect = "invalid";
  } else if (kind === 3) {
    body = JSON.stringify(value(random, 0)) ?? "";
    expect = "unknown";
  } else {
    // Byte-level damage to a valid body: flips, cuts and insertions.
    const bytes = [...new TextEncoder().encode(JSON.stringify({ message: visible(random, 30) }))];
    for (let n = 1 + int(random, 3); n > 0; n--) {
      const at = int(random, bytes.length - 1);
      const op = int(random, 2);
      if (op === 0) bytes[at] = int(random, 255);
      else if (op === 1) bytes.splice(at, 1 + int(random, 4));
      else bytes.splice(at, 0, int(random, 255));
    }
    body = new Uint8Array(bytes);
    expect = "unknown";
  }
  return { body, type, expect: wrongType ? "invalid" : expect };
}

Deno.test(`fuzz: ${RUNS} generated requests (seed ${SEED}) all get documented JSON answers`, async () => {
  const random = prng(SEED);
  const { handler, state } = fakeHandler();
  const statuses = new Set(Object.values(ERRORS).map((entry) => entry.status).concat(200));
  const seen: Record<string, number> = {};
  for (let run = 0; run < RUNS; run++) {
    const { body, type, expect } = generate(random);
    state.deliverFails = random() < 0.1;
    state.appendFails = random() < 0.1;
    const before = { texts: state.texts.length, lines: state.lines.length };
    const where = `seed ${SEED}, run ${run}, body ${JSON.stringify(String(body).slice(0, 200))}`;
    const headers = { "x-forwarded-for": `10.${run >> 16}.${(run >> 8) & 255}.${run & 255}` };
    const response = await handler(
      new Request("http://localhost/api/contact", {
        method: "POST",
        headers: type === "" ? headers : { ...headers, "content-type": type },
        body,
      }),
      PROXY,
    );
    assert.ok(statuses.has(response.status), `${where}: status ${response.status}`);
    assert.equal(response.headers.get("content-type"), "application/json", where);
    const answer = await response.json();
    assert.equal(answer.ok, response.status === 200, where);
    if (!answer.ok) {
      assert.equal(ERRORS[answer.error as keyof typeof ERRORS].status, response.status);
    }
    const notified = state.texts.length - before.texts;
    const recorded = state.lines.length - before.lines;
    // A notification is attempted exactly when a record is: only for valid submissions.
    assert.equal(notified, recorded, where);
    assert.ok(notified <= 1, where);
    if (recorded === 1) {
      const record = JSON.parse(state.lines.at(-1)!);
      assert.ok(record.message.trim() !== "" && [...record.message].length <= 4000, where);
      const expected = state.deliverFails ? (state.appendFails ? 500 : 502) : 200;
      assert.equal(response.status, expected, where);
    }
    if (expect === "valid") assert.equal(recorded, 1, where);
    if (expect === "honeypot" || expect === "invalid") assert.equal(recorded, 0, where);
    if (expect === "honeypot") assert.deepEqual([response.status, answer], [200, { ok: true }]);
    if (expect === "invalid") assert.ok(response.status >= 400 && response.status < 500, where);
    seen[`${expect} ${response.status}`] = (seen[`${expect} ${response.status}`] ?? 0) + 1;
  }
  // The generator reaches every class (guards against a generator that degenerated).
  for (
    const key of [
      "valid 200",
      "valid 502",
      "valid 500",
      "honeypot 200",
      "invalid 400",
      "invalid 415",
    ]
  ) {
    assert.ok((seen[key] ?? 0) > 0, `never saw ${key}: ${JSON.stringify(seen)}`);
  }
  // Logs carry no sender data: no name, contact or message fields, no client address.
  for (const log of state.logs) {
    for (const field of ["name", "contact", "message", "ip"]) assert.ok(!(field in log), field);
    assert.doesNotMatch(JSON.stringify(log), /\b10\.\d+\.\d+\.\d+\b/);
  }
});
