/**
 * `contactd train`: labelled JSON lines (an export with a label added) or plain texts with
 * `--label`, taught through the database as presses would teach them; a running filter scores
 * with it after its next refresh; teaching the same again changes nothing; forget takes a
 * trained record back; usage errors.
 */
import assert from "node:assert/strict";
import { OWN_FILES_REVOKED, parseCommandLine, runCli } from "../../lib/cli/cli.ts";
import { TRAIN_BATCH, trainingExamples } from "../../lib/cli/train_command.ts";
import { looksLikeSpam, MIN_EXAMPLES } from "../../lib/learn/classifier.ts";
import { MAX_MODEL_TOKENS, SpamFilter } from "../../lib/spam/spam_filter.ts";
import { fakeCliIo } from "./_cli_io.ts";
import { withTempStore } from "../support/temp_store.ts";
import { madeUp } from "../support/spam_texts.ts";

const NOW = new Date("2026-11-25T00:00:00Z");

async function cli(args: string[], file: string, stdin: string) {
  const { io, out, err, revoked } = fakeCliIo({
    env: (name) => name === "MESSAGES_FILE" ? file : undefined,
    now: () => NOW,
    readAllStdin: () => Promise.resolve(stdin),
  });
  return { code: await runCli(args, io), out, err, revoked };
}

/** An export's lines, each with its label added, `spam` spam and `ham` not. */
function labelledExport(seed: number, spam: number, ham: number): string {
  const next = madeUp(seed);
  return Array.from({ length: spam + ham }, (_, i) => {
    const isSpam = i < spam;
    return JSON.stringify({
      ts: "2026-11-20T10:00:00Z",
      id: `r${seed}x${i}`,
      ...next(isSpam),
      ip: "192.0.2.1",
      messenger_ok: true,
      messenger_error: null,
      label: isSpam ? "spam" : "ham",
    });
  }).join("\n");
}

Deno.test("train teaches labelled records through the database; a running filter scores with them after its refresh", async () => {
  await withTempStore(async ({ store, messagesFile }) => {
    const filter = await SpamFilter.open({ store, now: () => NOW.getTime(), log: () => {} });
    const input = labelledExport(1, MIN_EXAMPLES.spam, MIN_EXAMPLES.ham) +
      '\n{"message":"no label"}\nnot json\n';
    const { code, out, err, revoked } = await cli(["train"], messagesFile, input);
    assert.equal(code, 0, err.join());
    assert.match(out[0]!, new RegExp(`taught ${MIN_EXAMPLES.spam + MIN_EXAMPLES.ham} example`));
    assert.match(out[0]!, /2 skipped/);
    assert.deepEqual(revoked, [...OWN_FILES_REVOKED]);
    assert.equal(filter.score(madeUp(9)(true)), undefined, "not yet refreshed");
    await filter.refresh();
    assert.ok(looksLikeSpam(filter.score(madeUp(9)(true))));
    assert.ok(!looksLikeSpam(filter.score(madeUp(9)(false))));
    // The same again: known already, nothing counted twice.
    const again = await cli(["train"], messagesFile, input);
    assert.match(again.out[0]!, /taught 0 example\(s\) \(60 known already/);
    assert.deepEqual((await store.run("spam.model", undefined)).totals, {
      spam: MIN_EXAMPLES.spam,
      ham: MIN_EXAMPLES.ham,
    });
    // A trained record is forgotten like a pressed one.
    assert.equal(await filter.forget(new Set(["r1x0"]), false), 1);
    assert.equal(filter.counts().spam, MIN_EXAMPLES.spam - 1);
  });
});

Deno.test("train --label reads plain texts separated by NUL bytes, each one example", async () => {
  const { examples, skipped } = await trainingExamples(
    "buy cheap seo\u0000\n\u0000crypto profit now",
    "spam",
    NOW,
  );
  assert.equal(skipped, 0);
  assert.deepEqual(examples.map((example) => [example.label, example.source.message]), [
    ["spam", "buy cheap seo"],
    ["spam", "crypto profit now"],
  ]);
  assert.ok(examples.every((example) => /^text:[0-9a-f]{24}$/.test(example.submission)));
  assert.notEqual(examples[0]!.submission, examples[1]!.submission);
  await withTempStore(async ({ messagesFile, store }) => {
    const { code, err } = await cli(["train", "--label", "ham"], messagesFile, "hello\u0000thanks");
    assert.equal(code, 0, err.join());
    assert.deepEqual((await store.run("spam.model", undefined)).totals, { spam: 0, ham: 2 });
  });
});

Deno.test("train refuses a wrong --label, --label elsewhere, and input with nothing to learn", async () => {
  assert.throws(() => parseCommandLine(["train", "--label", "maybe"]), /--label takes spam or ham/);
  assert.throws(() => parseCommandLine(["export", "--label", "spam"]), /--label is for train only/);
  assert.deepEqual(parseCommandLine(["train", "--label", "ham"]), {
    kind: "run",
    command: "train",
    train: { label: "ham" },
  });
  await withTempStore(async ({ messagesFile }) => {
    const { code, err } = await cli(["train"], messagesFile, '{"message":"x"}\n');
    assert.equal(code, 1);
    assert.match(err[0]!, /contactd train: nothing to learn/);
  });
});

Deno.test("train leaves the model within MAX_MODEL_TOKENS, however many new words it taught", async () => {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const word = (i: number) =>
    Array.from({ length: 4 }, (_, k) => letters[Math.floor(i / 26 ** k) % 26]).join("");
  // Texts of 1,000 new words each (a submission's most), together beyond the bound.
  const texts = Array.from(
    { length: Math.ceil(MAX_MODEL_TOKENS / 1000) + 2 },
    (_, t) => Array.from({ length: 1000 }, (_, i) => `w${word(t * 1000 + i)}`).join(" "),
  );
  await withTempStore(async ({ messagesFile, store }) => {
    const { code, err } = await cli(
      ["train", "--label", "ham"],
      messagesFile,
      texts.join("\u0000"),
    );
    assert.equal(code, 0, err.join());
    const model = await store.run("spam.model", undefined);
    assert.equal(model.totals.ham, texts.length);
    assert.ok(model.tokens.length <= MAX_MODEL_TOKENS, `${model.tokens.length} token rows`);
  });
});

Deno.test("a trained line's ts is read as a time, never later than now, so retention's cut reaches its lesson", async () => {
  const lines = ["2026-11-20T10:00:00.500Z", "not a date", "9999-01-01T00:00:00Z", 7]
    .map((ts, i) => JSON.stringify({ id: `t${i}`, ts, message: "hello", label: "ham" }))
    .join("\n");
  const { examples } = await trainingExamples(lines, undefined, NOW);
  assert.deepEqual(examples.map((example) => example.ts), [
    "2026-11-20T10:00:00Z",
    "2026-11-25T00:00:00Z",
    "2026-11-25T00:00:00Z",
    "2026-11-25T00:00:00Z",
  ]);
});

Deno.test("train never overrides a press: a record the owner pressed keeps the press's label", async () => {
  await withTempStore(async ({ store, messagesFile }) => {
    const filter = await SpamFilter.open({ store, now: () => NOW.getTime(), log: () => {} });
    const pressed = { id: "p1", ts: "2026-11-20T10:00:00Z", ...madeUp(3)(true) };
    await store.transaction([filter.lesson(pressed)]);
    assert.equal(await filter.teach("p1", "spam"), true);
    // An export labelled by hand, or by a wrong recipe: the same record said to be not spam.
    const line = JSON.stringify({ ...pressed, ip: "192.0.2.1", label: "ham" });
    const { code, out, err } = await cli(["train"], messagesFile, line);
    assert.equal(code, 0, err.join());
    assert.match(out[0]!, /taught 0 example\(s\) \(1 known already/);
    const model = await store.run("spam.model", undefined);
    assert.deepEqual(model.totals, { spam: 1, ham: 0 }, "the press's spam stays");
  });
});

Deno.test("train commits about 50 examples per transaction (a running service's senders wait for one batch only), teaching them all", async () => {
  assert.ok(TRAIN_BATCH <= 50, "a batch holds the write lock: a few milliseconds at most");
  await withTempStore(async ({ store, messagesFile }) => {
    const count = 2 * TRAIN_BATCH + 1;
    const input = labelledExport(4, TRAIN_BATCH, TRAIN_BATCH + 1);
    const { code, out, err } = await cli(["train"], messagesFile, input);
    assert.equal(code, 0, err.join());
    assert.match(out[0]!, new RegExp(`taught ${count} example`));
    const totals = (await store.run("spam.model", undefined)).totals;
    assert.deepEqual(totals, { spam: TRAIN_BATCH, ham: TRAIN_BATCH + 1 });
  });
});
