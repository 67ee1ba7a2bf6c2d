/**
 * The files of a submission the learned spam filter held (`SPAM_FILTER=hold`, `ATTACHMENTS`):
 * kept as an accepted submission's (its `files` rows named as kept, committed with its held row;
 * the spool's files; listed in its record), waiting for no chat while it is held, waiting for the
 * chat (with a sound, as its released notification) once it is released; reached by `forget`,
 * retention and `export --files` while held. A blocked sender's files are removed, as a honeypot hit's are.
 */
import assert from "node:assert/strict";
import { createHandler } from "../../lib/http/handler.ts";
import type { AcceptSpam } from "../../lib/http/accept.ts";
import { filesDirectory, openSpool, type Spool } from "../../lib/files/spool.ts";
import { copyOut, recordFiles } from "../../lib/files/export_files.ts";
import { keepingAttachments, keptAttachments, keptName } from "../../lib/storage/attachments.ts";
import { SpamFilter } from "../../lib/spam/spam_filter.ts";
import type { Block } from "../../lib/spam/block_list.ts";
import { looksLikeSpam } from "../../lib/learn/classifier.ts";
import type { Store } from "../../lib/storage/store.ts";
import { storeHandlerDeps } from "../support/store_handler.ts";
import { withTempStore } from "../support/temp_store.ts";
import { PEER } from "../support/handler_setup.ts";

const NOW = Date.parse("2026-11-22T14:03:09.500Z");
const PDF = new Uint8Array([...new TextEncoder().encode("%PDF-1.7\n"), ...new Uint8Array(2000)]);

/** A multipart post of a spammy message with one PDF. */
function spammyWithFile(): Request {
  const form = new FormData();
  form.append("message", "page one of google, cheap links");
  form.append("contact", "seo@example.com");
  form.append("cv", new File([PDF], "offer.pdf"));
  return new Request("http://localhost/api/contact", {
    method: "POST",
    headers: { "x-forwarded-for": "198.51.100.1", accept: "application/json" },
    body: form,
  });
}

/**
 * A handler over a real store and spool, holding what it scores 0.97 (the service's wiring of
 * lib/service/spam.ts and lib/service/files.ts); `block`: every sender is blocked.
 */
async function heldWorld(store: Store, spool: Spool, block?: Block) {
  const filter = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
  const spam: AcceptSpam = {
    score: (submission) => ({ score: 0.97, features: filter.scored(submission).features }),
    lesson: (submission, features) => filter.lesson(submission, features),
    keepHeld: (submission, spamScore, also) => filter.hold(submission, spamScore, also),
    hold: true,
  };
  const lines: string[] = [];
  const ids = ["heldfile1", "heldfile2"];
  const deps = storeHandlerDeps(store, NOW, {
    newId: () => ids.shift() ?? "heldfile9",
    append: (line) => (lines.push(line), Promise.resolve()),
    spam,
    attachments: { maxBytes: 1_000_000, kinds: new Set(["pdf"]), spool },
    keepingFiles: (submission) =>
      keepingAttachments(spool, submission, { silent: looksLikeSpam(submission.spamScore) }),
    ...(block === undefined ? {} : { blocks: { match: () => block } }),
  });
  return { filter, lines, handler: createHandler(deps) };
}

Deno.test("a submission the spam filter held keeps its files with its held row, out of the chat's way until released, then waiting as an accepted one's", async () => {
  await withTempStore(async ({ store, messagesFile }) => {
    const spool = await openSpool(filesDirectory(messagesFile));
    const { filter, lines, handler } = await heldWorld(store, spool);
    const response = await handler(spammyWithFile(), PEER);
    assert.equal(response.status, 200);
    await response.body?.cancel();
    // Its removal would follow the answer: give it a turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await filter.held(10)).count, 1);
    const record = JSON.parse(lines[0]!);
    assert.equal(record.held, "spam");
    assert.deepEqual(record.files.map((f: { name: string }) => f.name), ["offer.pdf"]);

    const rows = await store.run("files.of", { id: "heldfile1" });
    assert.deepEqual(rows.map((row) => [row.stored, row.state, row.silent]), [
      [keptName("heldfile1", 0), "waiting", undefined],
    ], "kept as an accepted submission's, not silent: its release is not marked");
    assert.deepEqual(await spool.list(), [keptName("heldfile1", 0)]);
    assert.deepEqual(await Deno.readFile(spool.path(keptName("heldfile1", 0))), PDF);
    // `contactd export --files DIR` finds it by its record while it is held.
    const out = await Deno.makeTempDir();
    try {
      const copied = await copyOut(filesDirectory(messagesFile), out, recordFiles(record));
      assert.deepEqual(copied, { copied: 1, missing: 0, damaged: 0 });
    } finally {
      await Deno.remove(out, { recursive: true });
    }
    assert.deepEqual(await store.run("files.waiting", { limit: 50 }), [], "held: not for the chat");
    assert.equal(await store.run("files.waitingCount", undefined), 0);

    const released = await filter.release(
      "heldfile1",
      async (_submission, also) => void await store.transaction(also),
    );
    assert.equal(released?.id, "heldfile1");
    assert.deepEqual(
      (await store.run("files.waiting", { limit: 50 })).map((row) => row.stored),
      [keptName("heldfile1", 0)],
      "released: its files follow its notification",
    );
    assert.equal(await store.run("files.waitingCount", undefined), 1);
  });
});

Deno.test("a held submission's files are removed by forget and by retention while it is held", async () => {
  await withTempStore(async ({ store, messagesFile }) => {
    const spool = await openSpool(filesDirectory(messagesFile));
    const { filter, handler } = await heldWorld(store, spool);
    for (let i = 0; i < 2; i++) await (await handler(spammyWithFile(), PEER)).body?.cancel();
    assert.deepEqual(await spool.list(), [keptName("heldfile1", 0), keptName("heldfile2", 0)]);
    const kept = keptAttachments(store, spool);

    assert.equal(
      await kept.forget!({ by: "id", value: "heldfile1" }, new Set(["heldfile1"]), false),
      1,
    );
    await filter.forget(new Set(["heldfile1"]), false);
    assert.deepEqual(await spool.list(), [keptName("heldfile2", 0)]);
    assert.deepEqual(await store.run("files.of", { id: "heldfile1" }), []);

    // Never released: retention removes it, its held row and its files alike.
    assert.equal(await kept.prune!(NOW + 1000), 1);
    await filter.prune(NOW + 1000);
    assert.deepEqual(await spool.list(), []);
    assert.equal((await filter.held(10)).count, 0);
  });
});

Deno.test("a blocked sender's files are removed, as a honeypot hit's: nothing of them is kept", async () => {
  await withTempStore(async ({ store, messagesFile }) => {
    const spool = await openSpool(filesDirectory(messagesFile));
    const block: Block = {
      kind: "contact",
      value: "seo@example.com",
      since: "2026-11-20T00:00:00Z",
      until: "2026-12-20T00:00:00Z",
      submission: "earlier1",
    };
    const { filter, lines, handler } = await heldWorld(store, spool, block);
    const response = await handler(spammyWithFile(), PEER);
    assert.equal(response.status, 200);
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(JSON.parse(lines[0]!).held, "spam");
    assert.equal(JSON.parse(lines[0]!).files, undefined, "its record lists none");
    assert.deepEqual(await spool.list(), []);
    assert.deepEqual(await store.run("files.storedNames", undefined), []);
    assert.equal((await filter.held(10)).count, 0);
  });
});
