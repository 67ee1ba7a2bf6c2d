/**
 * What the classifier learns from: the tokens, a field's words again without its prefix, and
 * cues of how the message looks (capitals, links, length, `!!`, amounts, HTML), bounded.
 */
import assert from "node:assert/strict";
import { cues, features, MAX_UPPER } from "../../lib/learn/features.ts";
import { tokens } from "../../lib/learn/tokens.ts";

Deno.test("features are the tokens, then a field's words again without its prefix, then the cues", () => {
  const source = { message: "hello", fields: { Subject: "Cheap SEO!" } };
  const found = features(source);
  assert.deepEqual(found.slice(0, tokens(source).length), tokens(source));
  const rest = found.slice(tokens(source).length);
  // The subject's words count as message words too; its punctuation does not.
  assert.deepEqual(rest.slice(0, 2), ["cheap", "seo"]);
  assert.deepEqual(rest.slice(2), cues("hello"));
  assert.ok(found.includes("subject:cheap") && !rest.includes("p:!"));
});

Deno.test("cues say how a message looks: words in capitals as written, share of capitals, links, length, !!, amounts, tags", () => {
  assert.deepEqual(cues("FREE money, ACT now!! Only $5 at http://a.example <a href=x>"), [
    "~upper:FREE",
    "~upper:ACT",
    "~caps:2",
    "~links:1",
    "~len:6",
    "~!!",
    "~amount",
    "~html",
  ]);
  assert.deepEqual(cues("thanks for the photos"), ["~caps:0", "~links:0", "~len:4"]);
  assert.deepEqual(cues(""), ["~caps:-", "~links:0", "~len:0"]);
  // Full-width capitals read as plain ones; two capitals are no shouting; a cue is never a token.
  assert.ok(cues("ＦＲＥＥ OK").includes("~upper:FREE"));
  assert.ok(!cues("OK go").some((cue) => cue.startsWith("~upper:")));
  assert.ok(
    !tokens({ message: "FREE!!", fields: { upper: "FREE" } }).some((t) => t.startsWith("~")),
  );
});

Deno.test("cues are bounded: at most MAX_UPPER words in capitals, however many the message has", () => {
  const found = cues("WORD ".repeat(MAX_UPPER * 10));
  assert.equal(found.filter((cue) => cue.startsWith("~upper:")).length, MAX_UPPER);
});
