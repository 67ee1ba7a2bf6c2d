/** Micro-benchmarks of the body's way through validation (`deno bench`). */
import { bodyKind } from "../lib/http/contact.ts";
import { decodeJson } from "../lib/common/json.ts";
import { parseSubmission } from "../lib/form/submission.ts";
import { DecoyPages } from "../lib/cases/decoy.ts";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const VALID = encode({
  name: "Ann Example",
  contact: "ann@example.org",
  message: "Hello! I would like to know more about your services.\n".repeat(4),
});
const LONGEST = encode({
  name: "n".repeat(200),
  contact: "c".repeat(200),
  message: "m".repeat(4000),
});
const HONEYPOT = encode({ name: "bot", message: "buy now", website: "http://spam.test" });
const INVALID = encode({ name: "Ann", message: "   " });

function validate(bytes: Uint8Array) {
  const decoded = decodeJson(bytes);
  return decoded.ok ? parseSubmission(decoded.value) : decoded;
}

Deno.bench(
  "validation: a typical valid submission",
  { group: "validation", baseline: true },
  () => {
    validate(VALID);
  },
);
Deno.bench("validation: every field at its limit", { group: "validation" }, () => {
  validate(LONGEST);
});
Deno.bench("validation: a honeypot hit", { group: "validation" }, () => {
  validate(HONEYPOT);
});
Deno.bench("validation: an invalid body (400)", { group: "validation" }, () => {
  validate(INVALID);
});
Deno.bench("validation: Content-Type check", () => {
  bodyKind("application/json");
  bodyKind("Application/JSON; charset=utf-8");
});

const decoys = new DecoyPages(crypto.getRandomValues(new Uint8Array(32)));
Deno.bench("honeypot: the decoy case's token and its page's text", () => {
  decoys.issue({ ts: "2026-11-28T00:00:00.000Z", text: "buy now" });
});
