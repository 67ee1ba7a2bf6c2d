/**
 * `deno task bench` (a part): a 50 MB file sent with a form (`ATTACHMENTS=50MiB`). The real
 * service (its derived permission flags) behind the bench's fake Bot API takes a multipart post
 * streamed to it in 64 KiB chunks, then sends the file on as a document. Prints a Markdown table:
 * the upload's wall time and throughput, the time until the document was sent, and the service's
 * resident memory (VmRSS, and the peak VmHWM) before, after the upload and after the send. The
 * goal: the peak stays under the service's usual one (memory does not grow with the file).
 *
 * Settings (environment): BENCH_UPLOAD_MB (default `50`).
 *
 * @module
 */
import { baseEnv, freePort, serviceCommand } from "../tests/support/service.ts";
import { SENT, startBenchApi } from "./fake_api.ts";
import { BENCH_TOKEN } from "./processes.ts";

const MB = 1_000_000;
const SIZE = Number(Deno.env.get("BENCH_UPLOAD_MB") ?? "50") * MB;
const CHUNK = 64 * 1024;

/** The peak and current RSS of process `pid`, MiB. */
async function memoryOf(pid: number): Promise<{ peak: number; current: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = (key: string) => Number(status.match(new RegExp(`${key}:\\s+(\\d+)`))?.[1]);
  return { peak: kib("VmHWM") / 1024, current: kib("VmRSS") / 1024 };
}

/** A multipart body with one PDF-looking file of `size` bytes, made as it is read. */
function uploadBody(size: number, boundary: string): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const head = encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="message"\r\n\r\nThe file\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="cv"; filename="big.pdf"\r\n` +
      `Content-Type: application/pdf\r\n\r\n%PDF-1.7\n`,
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const chunk = new Uint8Array(CHUNK).map((_, i) => (i * 31 + 7) & 0xff);
  let sent = 9; // the magic number's bytes, in the head
  let stage = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 0) {
        stage = 1;
        return controller.enqueue(head);
      }
      if (sent < size) {
        const part = chunk.subarray(0, Math.min(CHUNK, size - sent));
        sent += part.length;
        return controller.enqueue(part.slice());
      }
      controller.enqueue(tail);
      controller.close();
    },
  });
}

async function waitUntil(done: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const dir = await Deno.makeTempDir({ prefix: "contactd-upload-bench-" });
let documents = 0;
const api = startBenchApi(200, SENT, 0, (path) => {
  if (path.endsWith("/sendDocument")) documents++;
});
const port = freePort();
const url = `http://127.0.0.1:${port}`;
const { args, env } = serviceCommand({
  PORT: String(port),
  MESSAGES_FILE: `${dir}/messages.jsonl`,
  MESSENGER_BOT_TOKEN: BENCH_TOKEN,
  MESSENGER_CHAT_ID: "1",
  MESSENGER_API_URL: api.url,
  ATTACHMENTS: "50MiB",
  RATE_LIMIT: "100/1s",
});
const child = new Deno.Command(Deno.execPath(), {
  args,
  env: { ...baseEnv(), ...env },
  clearEnv: true,
  stdin: "null",
  stdout: "null",
  stderr: "null",
}).spawn();
const rows: string[][] = [];
try {
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`${url}/api/health`).then((r) => (r.body?.cancel(), r.ok), () => false);
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // A warm-up first: 100 honeypot submissions (the HTTP path; none is sent to the chat, so the
  // document does not wait behind their pacing).
  for (let i = 0; i < 100; i++) {
    const response = await fetch(`${url}/api/contact`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": `10.0.0.${i + 1}` },
      body: JSON.stringify({ message: `text ${i}`, website: "x" }),
    });
    await response.body?.cancel();
  }
  const usual = await memoryOf(child.pid);
  rows.push(["after 100 submissions", "-", "-", usual.current, usual.peak].map(String));

  const boundary = "bench-boundary-7f3a";
  const started = performance.now();
  const response = await fetch(`${url}/api/contact`, {
    method: "POST",
    headers: {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      accept: "application/json",
      "x-forwarded-for": "10.1.0.1",
    },
    body: uploadBody(SIZE, boundary),
  });
  const status = response.status;
  await response.body?.cancel();
  const uploadS = (performance.now() - started) / 1000;
  const uploaded = await memoryOf(child.pid);
  rows.push([
    `${SIZE / MB} MB upload (answer ${status})`,
    uploadS.toFixed(2),
    `${(SIZE / MB / uploadS).toFixed(0)} MB/s`,
    uploaded.current,
    uploaded.peak,
  ].map(String));
  // The text part goes first, then the document.
  await waitUntil(() => documents === 1, 120_000, "the document sent");
  const sentS = (performance.now() - started) / 1000;
  const sent = await memoryOf(child.pid);
  rows.push([
    "sent on as a document",
    sentS.toFixed(2),
    `${(SIZE / MB / (sentS - uploadS)).toFixed(0)} MB/s`,
    sent.current,
    sent.peak,
  ].map(String));
} finally {
  child.kill("SIGTERM");
  await child.status;
  await api.close();
  await Deno.remove(dir, { recursive: true });
}
const fmt = (row: string[]) =>
  `| ${
    row.map((cell, i) => (i >= 3 && !Number.isNaN(Number(cell)) ? Number(cell).toFixed(0) : cell))
      .join(" | ")
  } |`;
console.log(
  [
    "| step | seconds | throughput | RSS MiB | peak RSS MiB |",
    "| --- | --- | --- | --- | --- |",
    ...rows.map(fmt),
  ].join("\n"),
);
