import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  CHAT_ID,
  runContactdTask,
  runPending,
  waitFor,
  withRestarts,
  withService,
} from "../support/service.ts";

/** A PDF of `size` bytes, a seeded pattern after its magic number. */
function pdf(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  bytes.set(new TextEncoder().encode("%PDF-1.7\n"));
  for (let i = 9; i < size; i++) bytes[i] = (i * 31 + (i >> 9)) & 0xff;
  return bytes;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

function postFile(url: string, content: Uint8Array<ArrayBuffer>, message = "see the file") {
  const form = new FormData();
  form.append("message", message);
  form.append("contact", "ann@example.org");
  form.append("cv", new File([content], "cv.pdf", { type: "application/octet-stream" }));
  return fetch(`${url}/api/contact`, {
    method: "POST",
    headers: { accept: "application/json", "x-forwarded-for": "198.51.100.7" },
    body: form,
  });
}

async function filesIn(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name);
}

Deno.test("e2e: a file reaches the fake Bot API byte for byte (sha256 compared), after its notification, as a reply captioned with its id", async () => {
  await withService({ ATTACHMENTS: "5MB" }, async (service, fake) => {
    const content = pdf(2_500_000);
    const response = await postFile(service.url, content);
    assert.equal(response.status, 200, await response.clone().text());
    await response.body?.cancel();
    await waitFor(() => fake.documents.length === 1, 20_000, "the document sent");
    const [document] = fake.documents;
    assert.equal(sha256(document!.bytes), sha256(content));
    const [record] = await service.records();
    assert.deepEqual(record!.files, [
      { name: "cv.pdf", size: content.length, type: "application/pdf", sha256: sha256(content) },
    ]);
    assert.equal(document!.caption, `#${record!.id}`);
    assert.equal(document!.chatId, CHAT_ID);
    // It answers the notification, which went first.
    const notification = fake.messages.get(`${CHAT_ID}:${document!.replyTo}`);
    assert.match(notification?.text ?? "", /see the file/);
    assert.equal((await Deno.stat(`${service.file}.files`)).mode! & 0o777, 0o700);
    // export --files DIR copies it out, through the launcher's derived permissions.
    const out = `${service.dir}/out`;
    await Deno.mkdir(out);
    const exported = await runContactdTask(["export", "--files", out], service.dir, {
      MESSAGES_FILE: service.file,
    });
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stderr, /1 file\(s\) copied into/);
    assert.equal(sha256(await Deno.readFile(`${out}/${record!.id}-1-cv.pdf`)), sha256(content));
  });
});

Deno.test("e2e: kill -9 between storing a file and sending it, then a restart: it is delivered once", async () => {
  await withRestarts(CHAT_ID, async (start, fake) => {
    const first = await start({ ATTACHMENTS: "5MB", DELIVERY_WAIT_MS: "1000" });
    // The notification's send hangs: the file is stored, nothing is sent.
    fake.script.push("hang");
    const content = pdf(300_000);
    const posting = postFile(first.url, content).then((r) => r.status, () => 0);
    await waitFor(
      () => fake.calls.some((call) => call.method === "sendMessage"),
      15_000,
      "sending",
    );
    first.process.kill("SIGKILL");
    await first.process.status;
    await posting;
    assert.equal(fake.documents.length, 0);
    const second = await start({ ATTACHMENTS: "5MB", MESSAGES_FILE: first.file });
    await waitFor(() => fake.documents.length === 1, 30_000, "the document sent after the restart");
    assert.equal(sha256(fake.documents[0]!.bytes), sha256(content));
    // Given time for a duplicate to show, none does.
    await new Promise((resolve) => setTimeout(resolve, 6000));
    assert.equal(fake.documents.length, 1);
    const pending = await runPending(second.file);
    assert.match(pending.stdout, /^nothing pending/);
  });
});

Deno.test("e2e: a file over ATTACHMENTS is cut off at the limit (413) with nothing kept", async () => {
  await withService({ ATTACHMENTS: "1MB" }, async (service, fake) => {
    const response = await postFile(service.url, pdf(3_000_000));
    assert.equal(response.status, 413);
    await response.body?.cancel();
    assert.deepEqual(await filesIn(`${service.file}.files`), []);
    assert.deepEqual(await service.records(), []);
    assert.equal(fake.delivered.length, 0);
  });
});

Deno.test("e2e: forget removes a submission's files from the disk and its documents from the chat", async () => {
  await withService({ ATTACHMENTS: "5MB" }, async (service, fake) => {
    const response = await postFile(service.url, pdf(100_000));
    assert.equal(response.status, 200);
    await waitFor(() => fake.documents.length === 1, 20_000, "the document sent");
    assert.equal((await filesIn(`${service.file}.files`)).length, 1);
    const [record] = await service.records();
    const forget = await runContactdTask(["forget", "--id", String(record!.id)], service.dir, {
      MESSAGES_FILE: service.file,
    });
    assert.equal(forget.code, 0, forget.stderr);
    await waitFor(
      () => fake.deletions.some((d) => d.messageId === fake.documents[0]!.messageId),
      20_000,
      "the document deleted from the chat",
    );
    assert.deepEqual(await filesIn(`${service.file}.files`), []);
  });
});
