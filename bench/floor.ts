/**
 * The floors contactd is measured against: a bare `Deno.serve` that answers the health JSON, and
 * does, for a POST, only the unavoidable I/O of a submission: read the body, one `fetch` to the
 * Bot API, one append + fsync of a line. No validation, no limiter, no logging, no ordering.
 * `FLOOR=durable`: what a submission that cannot be sent at once needs (the pacer holds it back):
 * one synced SQLite commit of its body (WAL, `synchronous=FULL`, one `INSERT` per transaction,
 * bench/floor_db.ts), then one append + fsync to the backup file, and no fetch. The commit runs
 * in a Worker that owns the connection (bench/floor_worker.ts), as contactd's does, so the HTTP
 * thread never waits for a sync; `FLOOR=durable-main` commits on the HTTP thread instead.
 *
 * Settings (environment): PORT, MESSENGER_API_URL, MESSAGES_FILE, FLOOR.
 *
 * @module
 */
import { openFloorDatabase } from "./floor_db.ts";

const port = Number(Deno.env.get("PORT"));
const api = `${Deno.env.get("MESSENGER_API_URL")}/bot1:x/sendMessage`;
const path = Deno.env.get("MESSAGES_FILE")!;
const file = await Deno.open(path, { append: true, create: true, mode: 0o600 });
const mode = Deno.env.get("FLOOR");
const commit = mode === "durable"
  ? await workerCommit(`${path}.db`)
  : mode === "durable-main"
  ? mainCommit(`${path}.db`)
  : undefined;

/** Commits on this thread: the event loop waits for each commit's sync. */
function mainCommit(database: string): (body: string) => Promise<void> {
  const insert = openFloorDatabase(database);
  return (body) => Promise.resolve(insert(body));
}

/** Commits in the worker; resolves when the worker has committed that body. */
async function workerCommit(database: string): Promise<(body: string) => Promise<void>> {
  const worker = new Worker(new URL("./floor_worker.ts", import.meta.url), { type: "module" });
  const waiting = new Map<number, () => void>();
  let opened = () => {};
  worker.onmessage = (event: MessageEvent<{ id: number }>) => {
    if (event.data.id === -1) return opened();
    waiting.get(event.data.id)!();
    waiting.delete(event.data.id);
  };
  await new Promise<void>((resolve) => {
    opened = resolve;
    worker.postMessage({ path: database });
  });
  let next = 0;
  return (body) =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      worker.postMessage({ id, body });
    });
}
const headers = { "content-type": "application/json" };

async function appendSynced(target: Deno.FsFile, line: Uint8Array): Promise<void> {
  for (let n = 0; n < line.byteLength;) n += await target.write(line.subarray(n));
  await target.syncData();
}
const encoder = new TextEncoder();

// FLOOR=refusal: what any refusal needs (path, three headers, the peer, the body), and no rule.
const refusal = Deno.env.get("FLOOR") === "refusal";

Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, async (request, info) => {
  if (request.method !== "POST") return new Response('{"ok":true,"configured":true}', { headers });
  if (refusal) {
    const seen = [
      new URL(request.url).pathname,
      request.headers.get("content-length"),
      request.headers.get("content-type"),
      request.headers.get("x-forwarded-for"),
      info.remoteAddr.hostname,
    ];
    await request.arrayBuffer();
    return new Response(`{"ok":${seen.length > 0}}`, { headers });
  }
  const body = await request.text();
  if (commit !== undefined) {
    await commit(body);
    await appendSynced(file, encoder.encode(body + "\n"));
    return new Response('{"ok":false,"stored":true}', { status: 502, headers });
  }
  const reply = await fetch(api, {
    method: "POST",
    headers,
    body: JSON.stringify({ chat_id: 1, text: body, link_preview_options: { is_disabled: true } }),
  });
  await reply.text();
  await appendSynced(file, encoder.encode(body + "\n"));
  return new Response('{"ok":true}', { headers });
});
