/**
 * Micro-benchmarks of what every POST and every chat update now pays (`deno bench`): the block
 * list's check of a sender among 10 000 blocks (it runs on each accepted submission), the chat
 * ledger's lookup of a pressed message among 100 000 entries, and reading a `getUpdates` reply of
 * 100 updates. Each should stay in microseconds, whatever the list's size.
 */
import { BlockList, spamBlocks } from "../lib/spam/block_list.ts";
import { applyLine, emptyFold, entryLine } from "../lib/storage/ledger_lines.ts";
import { parseUpdates } from "../lib/bot/updates.ts";

const NOW = Date.parse("2026-11-25T10:00:00Z");
const DAY = 86_400_000;

const blocks = new BlockList();
for (let i = 0; i < 10_000; i++) {
  const ip = `10.${(i >>> 8) & 255}.${i & 255}.1`;
  for (const block of spamBlocks({ id: `s${i}`, ip, contact: `spam${i}@example.org` }, NOW, DAY)) {
    blocks.add(block);
  }
}
let n = 0;
Deno.bench("block list: a sender not blocked, among 10 000 blocks", { group: "block" }, () => {
  blocks.match({ ip: `192.0.2.${n++ % 250}`, contact: "ann@example.org" }, NOW);
});
Deno.bench("block list: a blocked contact from another address", { group: "block" }, () => {
  blocks.match({ ip: "192.0.2.1", contact: `spam${n++ % 10_000}@Example.org` }, NOW);
});

const fold = emptyFold();
for (let i = 0; i < 100_000; i++) {
  applyLine(
    fold,
    entryLine({
      id: `s${i}`,
      ts: "2026-11-25T10:00:00Z",
      chat: -100,
      buttons: [2 * i + 1],
      messages: [2 * i + 1, 2 * i + 2],
      ip: "203.0.113.7",
      contact: "ann@example.org",
      state: "open",
    }),
  );
}
Deno.bench(
  "chat ledger: the entry of a pressed message, among 100 000",
  { group: "ledger" },
  () => {
    fold.entries.get(`s${n++ % 100_000}`);
  },
);

const updates = Array.from({ length: 100 }, (_, i) => ({
  update_id: 1000 + i,
  callback_query: {
    id: `q${i}`,
    from: { id: 7, is_bot: false, first_name: "Anna" },
    message: { message_id: i + 1, date: 1, chat: { id: -100, type: "supergroup" }, text: "x" },
    data: `s:abc${i}`,
  },
}));
Deno.bench("updates: reading a getUpdates reply of 100 presses", { group: "updates" }, () => {
  parseUpdates(updates, "contact_bot");
});
