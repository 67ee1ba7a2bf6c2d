import assert from "node:assert/strict";
import {
  formatAge,
  oldestMessageMs,
  PENDING_LISTED,
  type PendingItem,
  pendingItems,
  pendingText,
  type StatusReport,
  statusText,
} from "../../lib/inbox/status_text.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function report(overrides: Partial<StatusReport> = {}): StatusReport {
  return {
    delivery: { state: "ok" },
    pending: 0,
    oldestMs: undefined,
    replies: undefined,
    last24h: { delivered: 0, heldSpam: 0, rateLimited: 0 },
    ...overrides,
  };
}

Deno.test("/status says delivery is ok, nothing waits, and the last 24 hours' counts", () => {
  assert.equal(
    statusText(report({ last24h: { delivered: 12, heldSpam: 3, rateLimited: 7 } })),
    "✅ Delivery: ok\nNothing waits.\n" +
      "Last 24 h: 12 delivered, 3 held as spam, 7 refused by the rate limit.",
  );
});

Deno.test("/status names an outage, and a pause with its reason", () => {
  const outage = statusText(report({ delivery: { state: "outage" } }));
  assert.match(outage.split("\n")[0]!, /^⚠️ Delivery: the Bot API is failing/);
  const paused = statusText(
    report({ delivery: { state: "paused", reason: "the bot was blocked by the chat" } }),
  );
  assert.equal(paused.split("\n")[0], "⛔ Delivery: paused (the bot was blocked by the chat)");
  const noReason = statusText(report({ delivery: { state: "paused" } }));
  assert.equal(noReason.split("\n")[0], "⛔ Delivery: paused (settings)");
  // The three states read differently.
  assert.equal(
    new Set([statusText(report()), outage, paused].map((t) => t.split("\n")[0])).size,
    3,
  );
});

Deno.test("/status says how many wait and how old the oldest is", () => {
  const text = statusText(report({ pending: 4, oldestMs: 3 * HOUR + 5 * MINUTE }));
  assert.equal(text.split("\n")[1], "Waiting: 4, the oldest 3 h old.");
});

Deno.test("/status says the replies by email waiting only when replies by email are on", () => {
  assert.doesNotMatch(statusText(report()), /Replies/);
  assert.match(statusText(report({ replies: 0 })), /^Replies by email waiting: 0\.$/m);
  assert.match(statusText(report({ replies: 2 })), /^Replies by email waiting: 2\.$/m);
});

Deno.test("an age is said in seconds, minutes, hours, then days from two days on", () => {
  const cases: [number, string][] = [
    [-5, "0 s"],
    [0, "0 s"],
    [999, "0 s"],
    [59 * SECOND + 999, "59 s"],
    [MINUTE, "1 min"],
    [HOUR - 1, "59 min"],
    [HOUR, "1 h"],
    [2 * DAY - 1, "47 h"],
    [2 * DAY, "2 d"],
    [45 * DAY + HOUR, "45 d"],
  ];
  for (const [ms, said] of cases) assert.equal(formatAge(ms), said, String(ms));
});

Deno.test("/pending with nothing waiting says so", () => {
  assert.equal(pendingText([]), "Nothing waits.");
});

Deno.test("/pending lists ids and ages, oldest first, replies named as such", () => {
  const items: PendingItem[] = [
    { kind: "message", id: "young", ageMs: 30 * SECOND, attempts: 0 },
    { kind: "reply", id: "middle", ageMs: 12 * MINUTE, attempts: 0 },
    { kind: "message", id: "old", ageMs: 3 * DAY, attempts: 5 },
  ];
  assert.equal(
    pendingText(items),
    "Waiting (3):\n#old · 3 d · 5 failed attempts\nreply to #middle · 12 min\n#young · 30 s",
  );
});

Deno.test("/pending lists at most PENDING_LISTED, the oldest, and counts the rest", () => {
  const total = PENDING_LISTED + 7;
  const items: PendingItem[] = Array.from({ length: total }, (_, i) => ({
    kind: "message",
    id: `id${i}`,
    ageMs: i * MINUTE,
    attempts: 0,
  }));
  const lines = pendingText(items).split("\n");
  assert.equal(lines[0], `Waiting (${total}):`);
  assert.equal(lines.length, 1 + PENDING_LISTED + 1);
  assert.equal(lines[1], `#id${total - 1} · ${total - 1} min`);
  assert.equal(lines[PENDING_LISTED], `#id7 · 7 min`);
  assert.equal(lines.at(-1), "… and 7 more");
  // Exactly PENDING_LISTED: no "more" line.
  const exact = pendingText(items.slice(0, PENDING_LISTED)).split("\n");
  assert.equal(exact.length, 1 + PENDING_LISTED);
  assert.doesNotMatch(exact.join("\n"), /more/);
});

Deno.test("/pending does not reorder the caller's list", () => {
  const items: PendingItem[] = [
    { kind: "message", id: "a", ageMs: 1, attempts: 0 },
    { kind: "message", id: "b", ageMs: 2, attempts: 0 },
  ];
  pendingText(items);
  assert.deepEqual(items.map((item) => item.id), ["a", "b"]);
});

Deno.test("one failed attempt is said in the singular", () => {
  const text = pendingText([{ kind: "message", id: "a", ageMs: 0, attempts: 1 }]);
  assert.equal(text.split("\n")[1], "#a · 0 s · 1 failed attempt");
});

Deno.test("the answers can carry no personal data: their inputs are ids, ages and counts", () => {
  // Compile-time: these fail to type-check when a field is added to (or removed from) the inputs.
  const pendingKeys: Record<keyof PendingItem, true> = {
    kind: true,
    id: true,
    ageMs: true,
    attempts: true,
  };
  const statusKeys: Record<keyof StatusReport, true> = {
    delivery: true,
    pending: true,
    oldestMs: true,
    replies: true,
    files: true,
    last24h: true,
    spamFilter: true,
  };
  assert.deepEqual(Object.keys(pendingKeys).sort(), ["ageMs", "attempts", "id", "kind"]);
  assert.equal(Object.keys(statusKeys).length, 7);
  // Run-time: every line of /pending is an id, an age and a count, nothing else.
  const items: PendingItem[] = Array.from({ length: 40 }, (_, i) => ({
    kind: i % 3 === 0 ? "reply" : "message",
    id: `k3J9x-Q${i}`,
    ageMs: i * 7 * HOUR,
    attempts: i % 5,
  }));
  const [head, ...lines] = pendingText(items).split("\n");
  assert.equal(head, "Waiting (40):");
  for (const line of lines.slice(0, -1)) {
    assert.match(
      line,
      /^(reply to )?#[A-Za-z0-9_-]+ · \d+ (s|min|h|d)( · \d+ failed attempts?)?$/,
      line,
    );
  }
  assert.equal(lines.at(-1), "… and 10 more");
});

Deno.test("what waits: messages not yet in the chat and replies not yet emailed, with their ages; the oldest message's age", () => {
  const now = Date.parse("2026-11-25T12:00:00Z");
  const items = pendingItems(
    [
      { id: "a", ts: "2026-11-25T11:00:00Z", attempts: 2, done: false },
      { id: "b", ts: "2026-11-25T11:59:00Z", attempts: 0, done: "delivered" },
      { id: "c", ts: "2026-11-25T11:30:00Z", attempts: 0, done: false },
    ],
    [{ submission: "d", ts: "2026-11-25T10:00:00Z", attempts: 1 }],
    now,
  );
  assert.deepEqual(items, [
    { kind: "message", id: "a", ageMs: 3_600_000, attempts: 2 },
    { kind: "message", id: "c", ageMs: 1_800_000, attempts: 0 },
    { kind: "reply", id: "d", ageMs: 7_200_000, attempts: 1 },
  ]);
  // The reply is older, but /status's oldest is a message's.
  assert.equal(oldestMessageMs(items), 3_600_000);
  assert.equal(oldestMessageMs([]), undefined);
});

Deno.test("a form's group sees what belongs to it only: its forms' submissions and the replies written there, no site-wide counts", () => {
  const now = Date.parse("2026-11-25T12:00:00Z");
  const DEFAULT = -100_1;
  const SHOP = -100_2;
  const chatOf = (form: string | undefined) => (form === "shop" ? SHOP : DEFAULT);
  const messages = [
    { id: "a", ts: "2026-11-25T11:00:00Z", attempts: 0, done: false },
    { id: "b", ts: "2026-11-25T11:00:00Z", attempts: 0, done: false, form: "shop" },
    { id: "c", ts: "2026-11-25T11:00:00Z", attempts: 0, done: false, form: "press" },
  ];
  const replies = [
    { submission: "a", ts: "2026-11-25T11:00:00Z", attempts: 0, chat: DEFAULT },
    { submission: "b", ts: "2026-11-25T11:00:00Z", attempts: 0, chat: SHOP },
  ];
  const ids = (chat: number) =>
    pendingItems(messages, replies, now, { chat, chatOf }).map((item) => `${item.kind}:${item.id}`);
  assert.deepEqual(ids(SHOP), ["message:b", "reply:b"]);
  assert.deepEqual(ids(DEFAULT), ["message:a", "message:c", "reply:a"]);
  // Without the site-wide counts, /status has no "Last 24 h" line.
  assert.ok(!statusText(report({ last24h: undefined })).includes("Last 24 h"));
});
