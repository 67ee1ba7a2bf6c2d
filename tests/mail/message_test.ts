import assert from "node:assert/strict";
import nodemailer from "nodemailer";
import {
  composeReply,
  headerText,
  MAX_SUBJECT,
  replyBody,
  type ReplyDraft,
  type ReplySettings,
  replySubject,
} from "../../lib/mail/message.ts";

/** The raw RFC 5322 message nodemailer builds for `options` (no server: its stream transport). */
async function raw(settings: ReplySettings, draft: ReplyDraft): Promise<string> {
  const transport = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    newline: "windows",
  });
  const info = await transport.sendMail(composeReply(settings, draft));
  return new TextDecoder().decode(info.message as Uint8Array);
}

/** The message's header block, unfolded: one [name, value] per header. */
function headers(message: string): [string, string][] {
  const head = message.slice(0, message.indexOf("\r\n\r\n")).replace(/\r\n[ \t]+/g, " ");
  return head.split("\r\n").map((line) => {
    const colon = line.indexOf(":");
    return [line.slice(0, colon), line.slice(colon + 1).trim()];
  });
}

function body(message: string): string {
  const text = message.slice(message.indexOf("\r\n\r\n") + 4);
  // quoted-printable: soft breaks and =XX escapes back to UTF-8.
  const bytes = text.replace(/=\r\n/g, "").replace(
    /=([0-9A-F]{2})/g,
    (_, hex: string) => String.fromCharCode(parseInt(hex, 16)),
  );
  return new TextDecoder().decode(Uint8Array.from(bytes, (c) => c.charCodeAt(0)));
}

const SETTINGS: ReplySettings = { from: "site@example.org", replyTo: "owner@example.org" };
const DRAFT: ReplyDraft = {
  to: "carla@example.org",
  subject: "Re: Opening hours",
  text: "Hello Carla,\nwe open at nine.",
  quoted: { ts: "2026-11-22T14:03:09.000Z", message: "When do you open?\n\nThanks" },
};
const EXPECTED_HEADERS = [
  "Content-Transfer-Encoding",
  "Content-Type",
  "Date",
  "From",
  "MIME-Version",
  "Message-ID",
  "Reply-To",
  "Subject",
  "To",
];

Deno.test("a reply is plain UTF-8 text from REPLY_FROM, Reply-To REPLY_TO, to the sender", async () => {
  const message = await raw(SETTINGS, DRAFT);
  const map = new Map(headers(message));
  assert.deepEqual([...map.keys()].sort(), EXPECTED_HEADERS);
  assert.equal(map.get("From"), "site@example.org");
  assert.equal(map.get("Reply-To"), "owner@example.org");
  assert.equal(map.get("To"), "carla@example.org");
  assert.equal(map.get("Subject"), "Re: Opening hours");
  assert.equal(map.get("Content-Type"), "text/plain; charset=utf-8");
  assert.equal(
    body(message),
    "Hello Carla,\r\nwe open at nine.\r\n\r\nOn 2026-11-22 14:03 UTC, you wrote:\r\n" +
      "> When do you open?\r\n>\r\n> Thanks\r\n",
  );
});

Deno.test("without REPLY_TO there is no Reply-To; a site name shows in From", async () => {
  const message = await raw({ from: "site@example.org", fromName: "Bakery Rossi" }, DRAFT);
  const map = new Map(headers(message));
  assert.equal(map.has("Reply-To"), false);
  assert.equal(map.get("From"), "Bakery Rossi <site@example.org>");
});

Deno.test("no field of a reply can add a header, a recipient or a second part", async () => {
  const evil = "x\r\nBcc: victim@example.net\r\nContent-Type: text/html\r\n\r\n<b>hi</b>";
  const cases: [ReplySettings, ReplyDraft][] = [
    [SETTINGS, { ...DRAFT, subject: evil }],
    [SETTINGS, { ...DRAFT, subject: replySubject({ subjectField: evil, from: SETTINGS.from }) }],
    [SETTINGS, {
      ...DRAFT,
      subject: replySubject({ formTitle: `Shop${evil}`, from: SETTINGS.from }),
    }],
    [SETTINGS, { ...DRAFT, text: evil }],
    [SETTINGS, { ...DRAFT, quoted: { ts: evil, message: evil } }],
    [SETTINGS, { ...DRAFT, to: `carla@example.org${evil}` }],
    [{ ...SETTINGS, fromName: `Name${evil}` }, DRAFT],
    [{ ...SETTINGS, fromName: 'Eve" <eve@evil.example>, "x' }, DRAFT],
    [{ ...SETTINGS, from: `site@example.org${evil}` }, DRAFT],
    [{ ...SETTINGS, replyTo: `owner@example.org${evil}` }, DRAFT],
    [SETTINGS, { ...DRAFT, subject: "a\u2028Bcc: victim@example.net\u0085Cc: v@example.net" }],
  ];
  for (const [settings, draft] of cases) {
    const message = await raw(settings, draft);
    const names = headers(message).map(([name]) => name);
    const label = JSON.stringify([settings, draft]);
    for (const name of names) assert.ok(EXPECTED_HEADERS.includes(name), `${name} in ${label}`);
    assert.equal(new Set(names).size, names.length, label);
    assert.equal(names.includes("Bcc") || names.includes("Cc"), false, label);
    assert.equal(
      headers(message).find(([name]) => name === "Content-Type")?.[1],
      "text/plain; charset=utf-8",
      label,
    );
    assert.equal(composeReply(settings, draft).envelope !== undefined, true);
  }
});

Deno.test("the envelope has exactly the one recipient, whatever the To header says", () => {
  const options = composeReply(SETTINGS, { ...DRAFT, to: "carla@example.org" });
  assert.deepEqual(options.envelope, { from: "site@example.org", to: ["carla@example.org"] });
  assert.equal(options.disableFileAccess, true);
  assert.equal(options.disableUrlAccess, true);
});

Deno.test("the subject is the form's subject field, else the form's title, else the site's domain", () => {
  assert.equal(
    replySubject({ subjectField: "Opening hours", from: "s@example.org" }),
    "Re: Opening hours",
  );
  assert.equal(replySubject({ subjectField: "RE: hours", from: "s@example.org" }), "RE: hours");
  assert.equal(
    replySubject({ subjectField: "  ", formTitle: "Bakery Rossi", from: "s@example.org" }),
    "Re: your message to Bakery Rossi",
  );
  assert.equal(
    replySubject({ from: "site@shop.example.org" }),
    "Re: your message to shop.example.org",
  );
});

Deno.test("a subject is one line of at most MAX_SUBJECT characters", () => {
  const subject = replySubject({ subjectField: "é".repeat(500), from: "s@example.org" });
  assert.equal([...subject].length, MAX_SUBJECT);
  assert.ok(subject.endsWith("…"));
  assert.equal(headerText("a\r\n\tb\u0000c\u2029d   e", 100), "a b c d e");
});

Deno.test("the quoted message keeps its lines; CRLF and control characters do not survive in the body", () => {
  assert.equal(
    replyBody("ok\r\nthanks\u0007", { ts: "2026-01-02T03:04:05Z", message: "a\rb\r\n\r\nc" }),
    "ok\nthanks\n\nOn 2026-01-02 03:04 UTC, you wrote:\n> a\n> b\n>\n> c\n",
  );
});
