import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { PEER, setup } from "../support/handler_setup.ts";
import { withSpool } from "../support/temp_spool.ts";
import type { FileKind } from "../../lib/files/sniff.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";

/** A PDF of `size` bytes. */
function pdf(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  bytes.set(new TextEncoder().encode("%PDF-1.7\n"));
  for (let i = 9; i < size; i++) bytes[i] = (i * 13) & 0xff;
  return bytes;
}

function postMultipart(entries: [string, string | File][], path = "/api/contact"): Request {
  const form = new FormData();
  for (const [name, value] of entries) form.append(name, value);
  return new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "x-forwarded-for": "198.51.100.1", accept: "application/json" },
    body: form,
  });
}

const KINDS = new Set<FileKind>(["pdf", "png", "txt"]);

async function names(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name);
}

Deno.test("a form with ATTACHMENTS keeps a file with its submission and records its name, size, type and sha256", async () => {
  await withSpool(async (spool, dir) => {
    const kept: OutboxSubmission[] = [];
    const { state, handler } = setup({
      attachments: { maxBytes: 1_000_000, kinds: KINDS, spool },
      keepingFiles: (submission) => (kept.push(submission), Promise.resolve([])),
    });
    const content = pdf(300_000);
    const response = await handler(
      postMultipart([["message", "my CV"], ["cv", new File([content], "C:\\cv.pdf")]]),
      PEER,
    );
    assert.equal(response.status, 200);
    const sha256 = createHash("sha256").update(content).digest("hex");
    const record = JSON.parse(state.lines[0]!);
    assert.deepEqual(record.files, [
      { name: "cv.pdf", size: 300_000, type: "application/pdf", sha256 },
    ]);
    assert.equal(kept.length, 1);
    assert.equal(kept[0]!.files?.length, 1);
    assert.deepEqual(await Deno.readFile(spool.path(kept[0]!.files![0]!.stored)), content);
    assert.deepEqual(await names(dir), [kept[0]!.files![0]!.stored]);
  });
});

Deno.test("files over ATTACHMENTS are answered 413 at once with nothing kept, sent or recorded", async () => {
  await withSpool(async (spool, dir) => {
    const { state, handler } = setup({ attachments: { maxBytes: 100_000, kinds: KINDS, spool } });
    const response = await handler(
      postMultipart([["message", "m"], ["cv", new File([pdf(150_000)], "cv.pdf")]]),
      PEER,
    );
    assert.equal(response.status, 413);
    assert.match(
      (await response.json()).message,
      /larger than this form accepts \(100 KB in all\)/,
    );
    assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
    assert.deepEqual(await names(dir), []);
  });
});

Deno.test("a disguised executable is refused 415 naming its field, with nothing kept", async () => {
  await withSpool(async (spool, dir) => {
    const { state, handler } = setup({ attachments: { maxBytes: 100_000, kinds: KINDS, spool } });
    const program = new Uint8Array([0x4d, 0x5a, 0x90, 0x00, ...new Uint8Array(1000)]);
    const response = await handler(
      postMultipart([["message", "m"], [
        "cv",
        new File([program], "cv.pdf", {
          type: "application/pdf",
        }),
      ]]),
      PEER,
    );
    assert.equal(response.status, 415);
    const body = await response.json();
    assert.deepEqual([body.error, body.field], ["file_not_accepted", "cv"]);
    assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
    assert.deepEqual(await names(dir), []);
  });
});

Deno.test("a refused submission (honeypot, invalid fields) leaves none of its files behind", async () => {
  await withSpool(async (spool, dir) => {
    const { state, handler } = setup({ attachments: { maxBytes: 100_000, kinds: KINDS, spool } });
    const honeypot = await handler(
      postMultipart([["message", "m"], ["website", "x"], ["f", new File([pdf(500)], "a.pdf")]]),
      PEER,
    );
    assert.equal(honeypot.status, 200);
    const empty = await handler(
      postMultipart([["message", ""], ["f", new File([pdf(500)], "a.pdf")]]),
      PEER,
    );
    assert.equal(empty.status, 400);
    assert.equal(state.lines.length, 0);
    // Removal follows the answer: give it a turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(await names(dir), []);
  });
});

Deno.test("a form without ATTACHMENTS still refuses a file 415, and FORM_<ID>_ATTACHMENTS sets a form's own", async () => {
  await withSpool(async (spool) => {
    const { handler } = setup({
      attachments: { maxBytes: 0, kinds: KINDS, spool },
      forms: [{ id: "jobs", allowedOrigins: [], attachmentBytes: 1_000_000 }],
    });
    const file = () => new File([pdf(2000)], "cv.pdf");
    const plain = await handler(postMultipart([["message", "m"], ["cv", file()]]), PEER);
    assert.equal(plain.status, 415);
    assert.match((await plain.json()).message, /relays text only/);
    const jobs = await handler(
      postMultipart([["message", "m"], ["cv", file()]], "/api/contact/jobs"),
      PEER,
    );
    assert.equal(jobs.status, 200);
  });
});
