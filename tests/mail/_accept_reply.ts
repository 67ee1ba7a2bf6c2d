/**
 * Accepts one reply into the database at the path given and then hangs without sending it:
 * tests/e2e/mail_server_test.ts kills it with SIGKILL there, between acceptance and sending.
 * Arguments: the database's path, then the reply as JSON (`NewReply`).
 *
 * @module
 */
import { openReplyStore } from "../../lib/mail/reply_store.ts";
import { openLocalStore } from "../../lib/storage/store.ts";

const [path = "", json = "{}"] = Deno.args;
const store = await openReplyStore(openLocalStore(path, { create: true }), {
  now: () => new Date(),
});
await store.add(JSON.parse(json));
console.log("accepted");
// Hold here, as a service between acceptance and its first send.
await new Promise(() => setInterval(() => {}, 60_000));
