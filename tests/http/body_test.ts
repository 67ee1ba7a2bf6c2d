import assert from "node:assert/strict";
import { BODY_LIMIT, type BodyResult, withBody } from "../../lib/http/body.ts";

/** The body as a promise: what the rules receive, or the read's error as a rejection. */
function readBody(
  request: Request,
  limit = BODY_LIMIT,
  deadline = new AbortController().signal, // one that never fires
) {
  return withBody(request, limit, deadline, (body) => body, (error): BodyResult => {
    throw error;
  }, cancelMustNotFail);
}

/** The cancel after a deadline is not expected to fail here: a failure fails the test. */
function cancelMustNotFail(error: unknown): never {
  throw error;
}

function streamOf(chunks: Uint8Array[], pulled: { count: number }): ReadableStream<Uint8Array> {
  let index = 0;
  return new ReadableStream({
    pull(controller) {
      const chunk = chunks[index++];
      if (chunk === undefined) return controller.close();
      pulled.count++;
      controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 }); // pull only when read, so tests can count reads
}

Deno.test("a body read returns a body of exactly 16384 bytes", async () => {
  const request = new Request("http://x/", { method: "POST", body: new Uint8Array(BODY_LIMIT) });
  const result = await readBody(request);
  assert.ok(result.ok);
  assert.equal(result.bytes.byteLength, BODY_LIMIT);
});

Deno.test("a body read refuses a declared Content-Length over the limit without reading", async () => {
  const pulled = { count: 0 };
  const request = new Request("http://x/", {
    method: "POST",
    body: streamOf([new Uint8Array(10)], pulled),
    headers: { "content-length": String(BODY_LIMIT + 1) },
  });
  assert.deepEqual(await readBody(request), { ok: false, reason: "too_large" });
  assert.equal(pulled.count, 0);
});

Deno.test("a body read stops a chunked body one chunk past the limit", async () => {
  const pulled = { count: 0 };
  const chunks = Array.from({ length: 100 }, () => new Uint8Array(1000));
  const request = new Request("http://x/", { method: "POST", body: streamOf(chunks, pulled) });
  assert.deepEqual(await readBody(request), { ok: false, reason: "too_large" });
  assert.ok(pulled.count <= 18, `pulled ${pulled.count} chunks`);
});

Deno.test("a body read joins chunks in order and treats a missing body as empty", async () => {
  const pulled = { count: 0 };
  const request = new Request("http://x/", {
    method: "POST",
    body: streamOf([new Uint8Array([1, 2]), new Uint8Array([3])], pulled),
  });
  const result = await readBody(request);
  assert.ok(result.ok);
  assert.deepEqual([...result.bytes], [1, 2, 3]);
  const empty = await readBody(new Request("http://x/", { method: "POST" }));
  assert.ok(empty.ok);
  assert.equal(empty.bytes.byteLength, 0);
});

Deno.test("a body read gives up with 'timeout' when the deadline passes mid-body", async () => {
  const deadline = new AbortController();
  let pulls = 0;
  // One byte, then nothing more: a client that stopped sending.
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) {
        controller.enqueue(new Uint8Array([0x7b]));
        deadline.abort();
      }
    },
  }, { highWaterMark: 0 });
  const request = new Request("http://x/", { method: "POST", body });
  assert.deepEqual(await readBody(request, BODY_LIMIT, deadline.signal), {
    ok: false,
    reason: "timeout",
  });
});

Deno.test("a body read with an already expired deadline refuses a stalled body at once", async () => {
  const body = new ReadableStream<Uint8Array>({ pull() {} }, { highWaterMark: 0 });
  const request = new Request("http://x/", { method: "POST", body });
  const result = await readBody(request, BODY_LIMIT, AbortSignal.abort());
  assert.deepEqual(result, { ok: false, reason: "timeout" });
});

Deno.test("a body read returns a complete body when the deadline never fires", async () => {
  const request = new Request("http://x/", { method: "POST", body: "{}" });
  const result = await readBody(request, BODY_LIMIT, new AbortController().signal);
  assert.ok(result.ok);
  assert.equal(new TextDecoder().decode(result.bytes), "{}");
});

/** A declared-length body whose first byte arrives at once and the second when `finish` is called. */
function stalledBody(onFirstPull: () => void) {
  let finish = () => {};
  let pulls = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) {
        controller.enqueue(new Uint8Array([0x7b]));
        return onFirstPull();
      }
      finish = () => {
        controller.enqueue(new Uint8Array([0x7d]));
        controller.close();
      };
    },
  }, { highWaterMark: 0 });
  const request = new Request("http://x/", {
    method: "POST",
    body,
    headers: { "content-length": "2" },
  });
  return { request, finish: () => finish() };
}

Deno.test("withBody answers a declared-length body cut short by the deadline once, as a timeout", async () => {
  const deadline = new AbortController();
  const { request } = stalledBody(() => deadline.abort());
  const seen: BodyResult[] = [];
  const answer = await withBody(
    request,
    BODY_LIMIT,
    deadline.signal,
    (body) => {
      seen.push(body);
      return "answered";
    },
    () => "failed",
    cancelMustNotFail,
  );
  assert.equal(answer, "answered");
  assert.deepEqual(seen, [{ ok: false, reason: "timeout" }]);
});

Deno.test("withBody ignores a body that completes after its deadline answered", async () => {
  const deadline = new AbortController();
  const { request, finish } = stalledBody(() => {});
  const seen: BodyResult[] = [];
  const answered = withBody(
    request,
    BODY_LIMIT,
    deadline.signal,
    (body) => {
      seen.push(body);
      return body.ok ? "body" : body.reason;
    },
    () => "failed",
    cancelMustNotFail,
  );
  await new Promise((resolve) => setTimeout(resolve, 5));
  deadline.abort();
  assert.equal(await answered, "timeout");
  finish(); // the read completes now: it must not answer again
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual(seen, [{ ok: false, reason: "timeout" }]);
});

Deno.test("withBody hands an exception thrown by onBody to onError", async () => {
  const request = new Request("http://x/", {
    method: "POST",
    body: "{}",
    headers: { "content-length": "2" },
  });
  const errors: unknown[] = [];
  const answer = await withBody(
    request,
    BODY_LIMIT,
    new AbortController().signal,
    () => {
      throw new Error("rule failed");
    },
    (error) => (errors.push(error), "internal"),
    cancelMustNotFail,
  );
  assert.equal(answer, "internal");
  assert.equal(String(errors[0]), "Error: rule failed");
});

Deno.test("a failed body read goes to onError (and is rethrown if onError throws)", async () => {
  const failing = () =>
    new Request("http://x/", {
      method: "POST",
      body: new ReadableStream({ pull: (controller) => controller.error(new Error("reset")) }),
      headers: { "content-length": "10" },
    });
  const answer = await withBody(
    failing(),
    BODY_LIMIT,
    new AbortController().signal,
    () => "body",
    String,
    cancelMustNotFail,
  );
  assert.equal(answer, "Error: reset");
  await assert.rejects(readBody(failing(), BODY_LIMIT, new AbortController().signal), /reset/);
});

Deno.test("withBody answers 'timeout' at once on the last deadline it saw, once that deadline has passed", async () => {
  const first = new AbortController();
  const complete = () =>
    new Request("http://x/", { method: "POST", body: "{}", headers: { "content-length": "2" } });
  const reason = (body: BodyResult) => (body.ok ? "body" : body.reason);
  // The first read remembers `first` (and its waiting set) for the reads after it.
  assert.equal(
    await withBody(complete(), BODY_LIMIT, first.signal, reason, () => "failed", cancelMustNotFail),
    "body",
  );
  first.abort();
  const { request } = stalledBody(() => {});
  const late = withBody(
    request,
    BODY_LIMIT,
    first.signal,
    reason,
    () => "failed",
    cancelMustNotFail,
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise((resolve) => (timer = setTimeout(resolve, 200, "still waiting")));
  assert.equal(await Promise.race([late, waited]), "timeout");
  clearTimeout(timer);
  const second = new AbortController();
  assert.equal(
    await withBody(
      complete(),
      BODY_LIMIT,
      second.signal,
      reason,
      () => "failed",
      cancelMustNotFail,
    ),
    "body",
  );
});
