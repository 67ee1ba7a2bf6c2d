/**
 * The floors contactd is measured against: a bare `Deno.serve` that answers the health JSON, and
 * does, for a POST, only the unavoidable I/O of a submission: read the body, one `fetch` to the
 * Bot API, one append + fsync of a line. No validation, no limiter, no logging, no ordering.
 * `FLOOR=durable`: what a submission that cannot be sent at once needs (the pacer holds it back):
 * an append + fsync to the outbox, then one to the backup file, and no fetch.
 *
 * Settings (environment): PORT, MESSENGER_API_URL, MESSAGES_FILE, FLOOR.
 *
 * @module
 */

const port = Number(Deno.env.get("PORT"));
const api = `${Deno.env.get("MESSENGER_API_URL")}/bot1:x/sendMessage`;
const file = await Deno.open(Deno.env.get("MESSAGES_FILE")!, {
  append: true,
  create: true,
  mode: 0o600,
});
const durable = Deno.env.get("FLOOR") === "durable";
const outbox = durable
  ? await Deno.open(`${Deno.env.get("MESSAGES_FILE")!}.outbox`, {
    append: true,
    create: true,
    mode: 0o600,
  })
  : undefined;
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
  if (outbox !== undefined) {
    await appendSynced(outbox, encoder.encode(body + "\n"));
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
