import assert from "node:assert/strict";
import {
  FIELD_BULLET,
  MAX_MESSAGE_LENGTH,
  type NotificationInput,
  notificationParts,
  refusedNotice,
  SENDER_LINE_MARK,
  splitText,
} from "../../lib/bot/notification.ts";
import { stateLine, withStateLine } from "../../lib/bot/keyboard.ts";

const INPUT: NotificationInput = {
  name: "Ann <3",
  contact: "ann@example.org",
  message: "Hello *there*\n\nSecond paragraph.",
  ip: "203.0.113.9",
  ts: "2026-11-22T14:03:09Z",
  id: "k3x9q2ab",
};

/** The notification of a message that fits one part. */
function formatNotification(input: NotificationInput): string {
  const parts = notificationParts(input);
  assert.equal(parts.length, 1);
  return parts[0]!;
}

/** True if some part starts or ends inside a surrogate pair. */
function splitsPair(parts: string[]): boolean {
  return parts.some((part) => /^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(part));
}

Deno.test("a notification is a header with the submission's id, a blank line, then the message", () => {
  assert.equal(
    formatNotification(INPUT),
    [
      "New contact message #k3x9q2ab",
      "From: Ann <3",
      "Contact: ann@example.org",
      "IP: 203.0.113.9",
      "Time: 2026-11-22T14:03:09Z",
      "",
      "Hello *there*\n\nSecond paragraph.",
    ].join("\n"),
  );
});

Deno.test("a notification shows a dash for an empty name or contact", () => {
  const text = formatNotification({ ...INPUT, name: "", contact: "" });
  assert.ok(text.includes("\nFrom: —\n"));
  assert.ok(text.includes("\nContact: —\n"));
});

Deno.test("a notification keeps a header field on one line even if it has a line break", () => {
  const text = formatNotification({ ...INPUT, name: "Eve\nIP: 127.0.0.1", contact: "x\u2028y" });
  assert.equal(text.split("\n\n")[0]!.split("\n").length, 5);
  assert.ok(text.includes("From: Eve IP: 127.0.0.1\n"));
  assert.ok(text.includes("Contact: x y\n"));
});

Deno.test("a notification keeps the message verbatim, markup included", () => {
  const message = "<b>not bold</b> _x_ `y`\n\n\n  indented";
  assert.ok(formatNotification({ ...INPUT, message }).endsWith(`\n\n${message}`));
});

Deno.test("splitText returns [] for empty text", () => {
  assert.deepEqual(splitText(""), []);
});

Deno.test("splitText keeps text of exactly 4096 units in one part", () => {
  const text = "a".repeat(4096);
  assert.deepEqual(splitText(text), [text]);
});

Deno.test("splitText cuts 4097 units without separators into 4096 + 1", () => {
  const parts = splitText("a".repeat(4097));
  assert.deepEqual(parts.map((part) => part.length), [4096, 1]);
});

Deno.test("splitText never splits a surrogate pair straddling the boundary", () => {
  const text = "a".repeat(4095) + "😀" + "b";
  const parts = splitText(text);
  assert.deepEqual(parts, ["a".repeat(4095), "😀b"]);
  assert.ok(!splitsPair(parts));
});

Deno.test("splitText fits a surrogate pair ending exactly at the boundary", () => {
  const text = "a".repeat(4094) + "😀" + "b";
  assert.deepEqual(splitText(text), ["a".repeat(4094) + "😀", "b"]);
});

Deno.test("splitText prefers a line break in the last quarter of the window", () => {
  const text = "a".repeat(3500) + "\n" + "b".repeat(300) + " " + "c".repeat(1000);
  const parts = splitText(text);
  assert.equal(parts[0], "a".repeat(3500) + "\n");
  assert.equal(parts.join(""), text);
});

Deno.test("splitText falls back to a space when no line break is in the last quarter", () => {
  const text = "a".repeat(1000) + "\n" + "b".repeat(3000) + " " + "c".repeat(1000);
  const parts = splitText(text);
  assert.equal(parts[0], "a".repeat(1000) + "\n" + "b".repeat(3000) + " ");
});

Deno.test("splitText hard-cuts when separators are only early in the window", () => {
  const text = "a\n b" + "c".repeat(5000);
  assert.equal(splitText(text)[0]!.length, 4096);
});

Deno.test("splitText uses the last line break of the window, not the first", () => {
  const text = ("x".repeat(99) + "\n").repeat(50);
  const parts = splitText(text);
  assert.equal(parts[0]!.length, 4000);
  assert.ok(parts[0]!.endsWith("\n"));
});

Deno.test("splitText keeps a separator exactly at the window edge in the earlier part", () => {
  const text = "a".repeat(4095) + "\n" + "b".repeat(10);
  assert.deepEqual(splitText(text), ["a".repeat(4095) + "\n", "b".repeat(10)]);
});

Deno.test("splitText parts join back into the original text", () => {
  const text = Array.from({ length: 3000 }, (_, i) => `word${i}${i % 7 === 0 ? "\n" : " "}`)
    .join("") + "🎉".repeat(3000);
  const parts = splitText(text);
  assert.ok(parts.length > 1);
  assert.equal(parts.join(""), text);
  assert.ok(parts.every((part) => part.length > 0 && part.length <= 4096));
});

Deno.test("splitText honours a custom max", () => {
  assert.deepEqual(splitText("aaaa bbbb cccc", 5), ["aaaa ", "bbbb ", "cccc"]);
});

Deno.test("splitText rejects a max too small to hold a surrogate pair", () => {
  assert.throws(() => splitText("abc", 1), RangeError);
  assert.throws(() => splitText("abc", 2.5), RangeError);
  assert.throws(() => splitText("abc", Number.NaN), RangeError);
});

Deno.test("splitText with max 2 walks an all-emoji text pair by pair", () => {
  assert.deepEqual(splitText("😀😁😂", 2), ["😀", "😁", "😂"]);
});

Deno.test("splitText keeps a lone surrogate without stalling", () => {
  const text = "\uD800".repeat(5000);
  assert.equal(splitText(text).join(""), text);
});

Deno.test("the worst-case notification (all emoji) goes in marked parts within 4096 units, no pair split", () => {
  const input = {
    ...INPUT,
    name: "😀".repeat(200),
    contact: "📞".repeat(200),
    message: "💬".repeat(4000),
    ip: "2001:db8::1",
  };
  const parts = notificationParts(input);
  assert.equal(parts.length, 3);
  assert.ok(parts.every((part) => part.length <= MAX_MESSAGE_LENGTH));
  assert.ok(!splitsPair(parts));
  assert.ok(parts[0]!.startsWith("New contact message #k3x9q2ab (1/3)\n"));
  assert.ok(parts[1]!.startsWith("(2/3) #k3x9q2ab\n"));
  assert.ok(parts[2]!.startsWith("(3/3) #k3x9q2ab\n"));
  // Nothing of the message is lost or repeated.
  const body = parts[0]!.slice(parts[0]!.indexOf("\n\n") + 2) +
    parts.slice(1).map((part) => part.slice(part.indexOf("\n") + 1)).join("");
  assert.equal(body, input.message);
});

Deno.test("no part after the first starts with the sender's text: a forged second notification is impossible", () => {
  // The sender fills the first part to the brim, then writes what looks like a new notification.
  const forged = "New contact message #aaaaaaaa\nFrom: Bank\nContact: @bank\nIP: 1.2.3.4\n" +
    "Time: 2026-11-22T14:00:00Z\n\nPlease confirm your password";
  // The header takes about 110 units: a message over about 3980 goes on in a second part, and
  // the split prefers to cut right after the sender's line break.
  for (const filler of [3890, 3900, 3920, 3940, 3960]) {
    const message = "x".repeat(filler) + "\n" + forged;
    const parts = notificationParts({ ...INPUT, message: message.slice(0, 4000) });
    assert.ok(parts.length >= 2, `filler ${filler}`);
    for (const [i, part] of parts.entries()) {
      const expected = i === 0
        ? `New contact message #k3x9q2ab (1/${parts.length})\n`
        : `(${i + 1}/${parts.length}) #k3x9q2ab\n`;
      assert.ok(
        part.startsWith(expected),
        `part ${i + 1} starts with ${JSON.stringify(part.slice(0, 40))}`,
      );
      assert.ok(part.length <= MAX_MESSAGE_LENGTH);
    }
  }
});

Deno.test("a late notification says it comes late, why, and what the sender was told", () => {
  const failed = notificationParts({
    ...INPUT,
    late: { firstError: "502 bad gateway (non-JSON reply)", answered: 502 },
  })[0]!;
  assert.match(
    failed,
    /^New contact message #k3x9q2ab\nDelivered late: first attempt failed: 502 bad gateway \(non-JSON reply\); the sender was told it was saved but not yet delivered \(502\), and may have sent it again\.\nFrom: Ann <3\n/,
  );
  const waited = notificationParts({ ...INPUT, late: { firstError: null, answered: 502 } })[0]!;
  assert.match(waited, /\nDelivered late: it waited in the queue; the sender was told/);
  const crashed = notificationParts({ ...INPUT, late: { firstError: null, answered: null } })[0]!;
  assert.match(crashed, /the sender got no answer \(contactd stopped first\)/);
  // An API error text cannot add header lines either.
  const hostile = notificationParts({
    ...INPUT,
    late: { firstError: "500 x\nFrom: someone else", answered: 502 },
  })[0]!;
  assert.equal(hostile.split("\n\n")[0]!.split("\n").length, 6);
});

Deno.test("refusedNotice names the id, the refusal, the IP and the time, and nothing the sender wrote", () => {
  const notice = refusedNotice({
    name: "Ann <b>",
    contact: "ann@example.org",
    message: "x".repeat(5000),
    ip: "203.0.113.9",
    ts: "2026-11-22T14:03:09Z",
    id: "k3x9q2ab",
    late: { firstError: "400 Bad Request: message is too long", answered: 502 },
  }, "400 Bad Request: message is too long");
  assert.equal(
    notice,
    "New contact message #k3x9q2ab\n" +
      "Delivered late: first attempt failed: 400 Bad Request: message is too long; the sender was " +
      "told it was saved but not yet delivered (502), and may have sent it again.\n" +
      "Not shown: Telegram refused its text (400 Bad Request: message is too long); it is in the " +
      "backup file (MESSAGES_FILE), under this time and IP.\n" +
      "IP: 203.0.113.9\nTime: 2026-11-22T14:03:09Z",
  );
});

Deno.test("a form's other fields are labelled lines in the order sent, the subject leading", () => {
  const text = formatNotification({
    ...INPUT,
    name: "Carl",
    contact: "carl@example.org",
    contactFrom: "email",
    message: "Please call me",
    fields: { phone: "+1 555", subject: "Quote", budget: "5000" },
  });
  assert.equal(
    text,
    "New contact message #k3x9q2ab\nSubject: Quote\nFrom: Carl\n" +
      "Contact (email): carl@example.org\nIP: 203.0.113.9\nTime: 2026-11-22T14:03:09Z\n" +
      `${FIELD_BULLET}phone: +1 555\n${FIELD_BULLET}budget: 5000\n\nPlease call me`,
  );
  assert.equal(formatNotification(INPUT).includes(FIELD_BULLET), false);
});

Deno.test("a field cannot pass for a header line or a second notification", () => {
  const fields = { From: "Mallory", IP: "1.2.3.4\nNew contact message #aaaaaaaa", Subject: "a\rb" };
  const text = formatNotification({ ...INPUT, fields });
  const lines = text.split("\n");
  assert.equal(lines.filter((line) => line.startsWith("From:")).length, 1);
  assert.equal(lines.filter((line) => line.startsWith("IP:")).length, 1);
  assert.equal(lines.filter((line) => line.startsWith("New contact message")).length, 1);
  assert.ok(lines.includes("Subject: a b"));
  assert.ok(lines.includes(`${FIELD_BULLET}From: Mallory`));
});

Deno.test("the message cannot fake field lines: the fields end the header block, before its first blank line", () => {
  const message = `${FIELD_BULLET}email: ceo@bank.example\n${FIELD_BULLET}verified: yes`;
  const text = formatNotification({ ...INPUT, message, fields: { phone: "+1 555" } });
  const [head, ...rest] = text.split("\n\n");
  assert.ok(head!.endsWith(`\nTime: 2026-11-22T14:03:09Z\n${FIELD_BULLET}phone: +1 555`), head);
  assert.equal(head!.split("\n").filter((line) => line.startsWith(FIELD_BULLET)).length, 1);
  assert.equal(rest.join("\n\n"), message);
  // Without fields, the header block has no field line either.
  const plain = formatNotification({ ...INPUT, message }).split("\n\n")[0]!;
  assert.equal(plain.includes(FIELD_BULLET), false);
});

Deno.test("long fields go on in marked parts within 4096 units, like a long message", () => {
  const fields = Object.fromEntries(
    Array.from({ length: 20 }, (_, i) => [`field${i}`, String(i % 10).repeat(1000)]),
  );
  const parts = notificationParts({ ...INPUT, fields, message: "end" });
  assert.ok(parts.length >= 5, `${parts.length} parts`);
  assert.ok(parts.every((part) => part.length <= MAX_MESSAGE_LENGTH));
  parts.slice(1).forEach((part, i) => assert.ok(part.startsWith(`(${i + 2}/${parts.length}) #`)));
  const body = parts.map((part, i) => i === 0 ? part : part.slice(part.indexOf("\n") + 1)).join("");
  for (const [name, value] of Object.entries(fields)) {
    assert.ok(body.includes(`${FIELD_BULLET}${name}: ${value}\n`), name);
  }
  assert.ok(body.endsWith("\n\nend"));
});

/** Forged state lines: the exact one, and variants a sender may try. */
const FORGED = [
  "— ✓ Handled by Anna, 2026-11-27 09:12 UTC",
  "   — ✓ Handled by Anna, 2026-11-27 09:12 UTC",
  "\u00A0\u200B— ✓ Handled by Anna, 2026-11-27 09:12 UTC",
  "\u202E— ✓ Handled by Anna, 2026-11-27 09:12 UTC",
  "– ✔ Handled by Anna, 2026-11-27 09:12 UTC",
  "― ✔️ Hаndled by Anna, 2026-11-27 09:12 UTC",
  "− √ Handled by Anna",
  "─ 🚫 Spam by Anna, 2026-11-27 09:12 UTC",
  "— ⛔ Spam by Anna",
  "—↩ Reopened by Anna",
  "－ ✓ Handled by Anna",
  "— Handled by Anna, ２０２６-11-27 09:12 UTC",
  stateLine("handled", "Anna", "2026-11-27 09:12 UTC"),
  stateLine("spam", "Anna", "2026-11-27 09:12 UTC"),
  stateLine("open", "Anna", "2026-11-27 09:12 UTC"),
];

for (const forged of FORGED) {
  Deno.test(`a sender's line shaped like contactd's state line is marked as the sender's: ${JSON.stringify(forged)}`, () => {
    for (const message of [`Hi\n\n${forged}`, forged, `${forged}\nmore`]) {
      const parts = notificationParts({ ...INPUT, message });
      const line = parts.join("").split("\n").find((l) => l.endsWith(forged));
      assert.equal(line, `${SENDER_LINE_MARK}${forged}`);
      // Not taken for a state line when the owner acts: replaced by contactd's own, kept.
      const edited = withStateLine(parts[0]!, stateLine("open", "Olga", "2026-11-27 10:00 UTC"));
      assert.ok(edited.includes(`${SENDER_LINE_MARK}${forged}`));
    }
  });
}

Deno.test("a sender's lines that are not shaped like a state line are left as written (a list, a signature)", () => {
  const message = "- item one\n- item two\n-- \nAnna\n— Anna\n—\n1 — 2";
  assert.ok(formatNotification({ ...INPUT, message }).endsWith(`\n\n${message}`));
});
