import assert from "node:assert/strict";
import { newEntry, type OutboxEntry } from "../../lib/storage/outbox_lines.ts";
import { OutboxWindow } from "../../lib/storage/window.ts";

const entry = (id: string, offset = 0, length = 100): OutboxEntry =>
  newEntry({ id, ts: "2026-11-22T14:03:09Z" }, offset, length);

const window = (capacity = 4, compactAfter = 1000, fileBytes = 0) =>
  new OutboxWindow({ capacity, compactAfter, fileBytes });

Deno.test("the window sends new adds to the tail once it is full, and keeps them behind those waiting on disk", () => {
  const w = window(2);
  assert.equal(w.addToTail(), false);
  w.hold(entry("a"));
  assert.equal(w.addToTail(), false);
  w.hold(entry("b"));
  assert.equal(w.addToTail(), true, "full");
  w.addedToTail(200);
  assert.equal(w.scanFrom, 200);
  assert.equal(w.pendingCount, 3);
  w.change({ op: "recorded", id: "a", status: 200 });
  w.change({ op: "done", id: "a", ts: "t", result: "delivered" });
  assert.equal(w.addToTail(), true, "room again, but one waits on disk: behind it");
  w.addFailed();
  assert.equal(w.pendingCount, 2);
});

Deno.test("a change to a held entry applies at once; a second done is skipped; a finished entry leaves the window", () => {
  const w = window();
  w.hold(entry("a"));
  assert.equal(w.change({ op: "failed", id: "a", ts: "t1", error: "timeout" }), "held");
  assert.equal(w.entries.get("a")!.attempts, 1);
  assert.equal(w.change({ op: "done", id: "a", ts: "t2", result: "given_up" }), "held");
  assert.equal(w.pendingCount, 0, "pending no more at once");
  assert.equal(w.change({ op: "done", id: "a", ts: "t3", result: "delivered" }), "skip");
  assert.equal(w.entries.get("a")!.done, "given_up");
  assert.equal(w.change({ op: "recorded", id: "a", status: 502 }), "held");
  assert.equal(w.entries.has("a"), false, "done and recorded: finished");
  assert.equal(w.change({ op: "failed", id: "x", ts: "t", error: "e" }), "not_held");
});

Deno.test("a change written while a refill read its entry in, after what the scan read, is applied when the refill ends", () => {
  const w = window(1);
  w.hold(entry("a", 0));
  w.addToTail();
  w.addedToTail(100); // "late" waits on disk
  w.change({ op: "recorded", id: "a", status: 200 });
  w.change({ op: "done", id: "a", ts: "t", result: "delivered" });
  assert.equal(w.wantsRefill(), true);
  w.refillStarted();
  const fold = w.scan(false);
  fold.line({ op: "add", id: "late", ts: "t" }, 100, 50);
  const failed = { op: "failed", id: "late", ts: "t", error: "timeout" } as const;
  assert.equal(w.change(failed), "not_held");
  w.written(failed, 150); // after the scan's end: it did not see it
  w.refilled(fold.finish(150));
  assert.equal(w.entries.get("late")!.attempts, 1);
  assert.equal(w.wantsRefill(), false);
});

Deno.test("compaction is worth it once dead bytes reach the threshold and outweigh the live ones", () => {
  const w = window(4, 1000, 0);
  w.hold(entry("a", 0, 600));
  w.wrote(0, 600);
  w.hold(entry("b", 600, 600));
  w.wrote(600, 600);
  assert.equal(w.worthCompacting(), false, "nothing dead");
  w.change({ op: "recorded", id: "a", status: 200 });
  w.change({ op: "done", id: "a", ts: "t", result: "delivered" });
  w.wrote(1200, 500);
  assert.equal(w.worthCompacting(), true, "1100 dead bytes against 600 live");
  w.compacted({ moved: [[w.entries.get("b")!, 0, 600]], dropped: [], size: 600, tailSize: 0 });
  assert.equal(w.worthCompacting(), false);
  assert.equal(w.entries.get("b")!.offset, 0);
});
