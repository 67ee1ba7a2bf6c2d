/**
 * How a body ends that never reaches its end: its client went away (`upload_abandoned`, not an
 * internal error), or the service stops while it arrives (`503 stopping`); its files removed.
 */
import assert from "node:assert/strict";
import { PEER, post, setup } from "../support/handler_setup.ts";
import { withSpool } from "../support/temp_spool.ts";
import type { FileKind } from "../../lib/files/sniff.ts";

const encoder = new TextEncoder();
const KINDS = new Set<FileKind>(["pdf"]);

async function names(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name);
}

/** The head of a multipart body whose PDF goes on: its text part, then the file's first bytes. */
const HEAD = `--b\r\nContent-Disposition: form-data; name="message"\r\n\r\nhello\r\n` +
  `--b\r\nContent-Disposition: form-data; name="cv"; filename="cv.pdf"\r\n\r\n%PDF-1.7\n`;

/**
 * A body that sends `HEAD` and 64 KiB of the file, then, once `ready` resolves, `then` decides:
 * fail with an error (the client gone, or another), or wait for `cancel` (a stalled client).
 */
function bodyThat(then: Error | "stall", ready: () => Promise<unknown> = async () => {}): {
  body: ReadableStream<Uint8Array>;
  cancelled: Promise<void>;
} {
  const { promise: cancelled, resolve } = Promise.withResolvers<void>();
  let step = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      step++;
      if (step === 1) return controller.enqueue(encoder.encode(HEAD));
      if (step === 2) return controller.enqueue(new Uint8Array(64 * 1024).fill(0x41));
      await ready();
      if (then === "stall") return cancelled;
      controller.error(then);
    },
    cancel() {
      resolve();
    },
  });
  return { body, cancelled };
}

/** Resolves once the upload's file is in the spool (it was being written when the body ended). */
async function spooledIn(dir: string): Promise<void> {
  while ((await names(dir)).length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
}

function upload(body: ReadableStream<Uint8Array>): Request {
  return new Request("http://localhost/api/contact", {
    method: "POST",
    headers: {
      "content-type": "multipart/form-data; boundary=b",
      accept: "application/json",
      "x-forwarded-for": "198.51.100.1",
    },
    body,
  });
}

Deno.test("an upload whose client goes away mid-file is logged upload_abandoned at info, never internal_error, its file removed", async () => {
  await withSpool(async (spool, dir) => {
    const { state, handler } = setup({ attachments: { maxBytes: 1_000_000, kinds: KINDS, spool } });
    // What Deno.serve gives a body read whose client closed the connection.
    const gone = new Deno.errors.BadResource(
      "Cannot read request body as underlying resource unavailable",
    );
    const { body } = bodyThat(gone, () => spooledIn(dir));
    const response = await handler(upload(body), PEER);
    assert.equal(response.status, 400);
    assert.equal(response.headers.get("connection"), "close");
    assert.deepEqual(await names(dir), []);
    assert.deepEqual(state.logs.filter((line) => line.level === "error"), []);
    const lines = state.logs.filter((line) => line.event === "upload_abandoned");
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.level, "info");
    assert.match(String(lines[0]!.error), /^BadResource: /);
    assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
  });
});

Deno.test("an upload whose read fails for another reason is still an internal error, its file removed", async () => {
  await withSpool(async (spool, dir) => {
    const { state, handler } = setup({ attachments: { maxBytes: 1_000_000, kinds: KINDS, spool } });
    const { body } = bodyThat(new TypeError("a bug"));
    const response = await handler(upload(body), PEER);
    assert.equal(response.status, 500);
    assert.deepEqual(await names(dir), []);
    assert.ok(state.logs.some((line) => line.level === "error" && line.event === "internal_error"));
    assert.equal(state.logs.some((line) => line.event === "upload_abandoned"), false);
  });
});

Deno.test("a JSON body whose client goes away before its end is logged upload_abandoned, never internal_error", async () => {
  const { state, handler } = setup();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"message":"hel'));
      controller.error(new Deno.errors.ConnectionReset("Connection reset by peer"));
    },
  });
  const request = post("");
  const response = await handler(
    new Request(request.url, { method: "POST", headers: request.headers, body }),
    PEER,
  );
  assert.equal(response.status, 400);
  assert.deepEqual(state.logs.filter((line) => line.level === "error"), []);
  assert.equal(state.logs.filter((line) => line.event === "upload_abandoned").length, 1);
  assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
});

Deno.test("an upload still arriving when the service stops is ended at once: 503 stopping, its file removed", async () => {
  await withSpool(async (spool, dir) => {
    const stop = new AbortController();
    const { state, handler } = setup({
      attachments: { maxBytes: 1_000_000, kinds: KINDS, spool },
      stopping: stop.signal,
    });
    // A stalled client: the deadline (10 s and more) is far; the stop comes first.
    const { body, cancelled } = bodyThat("stall", () => spooledIn(dir).then(() => stop.abort()));
    const response = await handler(upload(body), PEER);
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("connection"), "close");
    assert.equal((await response.json()).error, "stopping");
    await cancelled;
    assert.deepEqual(await names(dir), []);
    assert.ok(state.logs.some((line) => line.status === 503 && line.result === "stopping"));
    assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
  });
});

Deno.test("a body still arriving when the service stops is answered 503 stopping at once, not 408 at its deadline", async () => {
  const stop = new AbortController();
  const { state, handler } = setup({ stopping: stop.signal });
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"message":"hel'));
    },
  });
  const request = post("");
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  const answer = handler(new Request(request.url, { method: "POST", headers, body }), PEER);
  stop.abort();
  const response = await answer;
  assert.equal(response.status, 503);
  assert.equal((await response.json()).error, "stopping");
  assert.ok(state.logs.some((line) => line.status === 503 && line.result === "stopping"));
  // Once stopped, a new body is not waited for either.
  const late = await handler(
    new Request(request.url, { method: "POST", headers, body: new ReadableStream() }),
    PEER,
  );
  assert.equal(late.status, 503);
});

Deno.test("what the rules after the body throw is an internal error, even an error that looks like the client's going away", async () => {
  const { handler, state } = setup({
    blocks: {
      match: () => {
        throw new Deno.errors.BadResource("a defect of contactd's, not the client's");
      },
    },
  });
  const response = await handler(post({ message: "hello", contact: "ann@example.org" }), PEER);
  assert.equal(response.status, 500);
  assert.deepEqual(
    state.logs.map(({ event }) => event).filter((e) => e !== "summary"),
    ["internal_error"],
  );
});
