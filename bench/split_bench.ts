/** Micro-benchmarks of the notification text and its split (`deno bench`). */
import { notificationParts, splitText } from "../lib/bot/notification.ts";

const INPUT = {
  name: "Ann",
  contact: "@ann",
  message: "Hello!",
  ip: "203.0.113.7",
  ts: "2026-11-22T14:03:09Z",
  id: "k3x9q2ab",
};
const LONG = "word ".repeat(1000) + "\n" + "🙂".repeat(3000); // over 4096 UTF-16 units

Deno.bench("splitText: a short text (one part)", { group: "split" }, () => {
  splitText(INPUT.message);
});
Deno.bench("splitText: the longest message (three parts, emoji)", { group: "split" }, () => {
  splitText(LONG);
});
Deno.bench("notificationParts: a short message", () => {
  notificationParts(INPUT);
});
Deno.bench("notificationParts: the longest message, marked parts", () => {
  notificationParts({ ...INPUT, message: LONG });
});
