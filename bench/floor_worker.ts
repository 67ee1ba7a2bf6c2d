/**
 * The floor's database worker (`FLOOR=durable`): owns the connection, as contactd's store worker
 * does, and commits each body it is sent in a transaction of its own, in arrival order, answering
 * its id after the commit. No batching: one synced commit per submission.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { openFloorDatabase } from "./floor_db.ts";

let insert: ((body: string) => void) | undefined;

self.onmessage = (event: MessageEvent<{ path: string } | { id: number; body: string }>) => {
  const message = event.data;
  if ("path" in message) {
    insert = openFloorDatabase(message.path);
    self.postMessage({ id: -1 });
    return;
  }
  insert!(message.body);
  self.postMessage({ id: message.id });
};
