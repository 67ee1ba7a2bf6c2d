/** Micro-benchmarks of the notification text and its split (`deno bench`). */
import { formatNotification, splitText } from "../lib/notification.ts";

const SHORT = formatNotification({
  name: "Ann",
  contact: "@ann",
  message: "Hello!",
  ip: "203.0.113.7",
  ts: "2026-11-22T14:03:09Z",
});
const LONG = "word ".repeat(1000) + "\n" + "🙂".repeat(3000); // over 4096 UTF-16 units

Deno.bench("splitText: a short notification (one part)", { group: "split" }, () => {
  splitText(SHORT);
});
Deno.bench("splitText: the longest message (three parts, emoji)", { group: "split" }, () => {
  splitText(LONG);
});
Deno.bench("formatNotification", () => {
  formatNotification({
    name: "Ann",
    contact: "@ann",
    message: "Hello!",
    ip: "203.0.113.7",
    ts: "2026-11-22T14:03:09Z",
  });
});
