/**
 * The env file reader: a byte-order mark, skipped lines named by number with the closest
 * setting, never a value.
 */
import assert from "node:assert/strict";
import { envFileNotes, formSettingWarnings, parseEnvFile } from "../../lib/config/settings.ts";

Deno.test("parseEnvFile drops a UTF-8 byte-order mark before the first setting", () => {
  const file = parseEnvFile("\uFEFFMESSENGER_BOT_TOKEN=1:abc\r\nPORT=9000\r\n");
  assert.deepEqual({ ...file.values }, { MESSENGER_BOT_TOKEN: "1:abc", PORT: "9000" });
  assert.deepEqual(file.warnings, []);
});

Deno.test("parseEnvFile names misspelt settings and lines without = by line number, with the closest setting", () => {
  const file = parseEnvFile(
    [
      "# comment",
      "",
      "MESSENGER_CHATID=5",
      "PROT=9000",
      "Messenger_Bot_Token=1:a",
      "just-a-token-pasted",
      "export HOST=::1",
      "TRUSTED_PROXY=none",
      "HOME=/root",
      "EDITOR=vi",
      "CONTACTD_ENV_FILE=/etc/contactd/env",
    ].join("\n"),
  );
  assert.deepEqual(file.warnings, [
    { line: 3, problem: "unknown_name", name: "MESSENGER_CHATID", closest: "MESSENGER_CHAT_ID" },
    { line: 4, problem: "unknown_name", name: "PROT", closest: "PORT" },
    {
      line: 5,
      problem: "unknown_name",
      name: "Messenger_Bot_Token",
      closest: "MESSENGER_BOT_TOKEN",
    },
    { line: 6, problem: "no_equals" },
    { line: 8, problem: "unknown_name", name: "TRUSTED_PROXY", closest: "TRUSTED_PROXIES" },
  ]);
  assert.equal(file.values.HOST, "::1");
});

Deno.test("parseEnvFile does not mistake the lines of a quoted value for lines without =", () => {
  const file = parseEnvFile('ALLOWED_ORIGINS="https://a.example,\nhttps://b.example"\nPORT=1\n');
  assert.deepEqual(file.warnings, []);
  assert.equal(file.values.PORT, "1");
});

Deno.test("envFileNotes never carries a value, and warns about a mode group or others may read", () => {
  const file = parseEnvFile("MESSENGER_BOT_TOKN=123:secret\n123:secret\n");
  const notes = envFileNotes("/etc/contactd/env", file, 0o100604);
  assert.equal(notes.length, 3);
  assert.deepEqual(notes[0]!.fields, {
    event: "file_mode",
    file: "/etc/contactd/env",
    mode: "604",
    hint: "chmod 600 it: it holds the bot token",
  });
  for (const note of notes) {
    assert.ok(!note.text.includes("secret"), note.text);
    assert.ok(!JSON.stringify(note.fields).includes("secret"));
  }
  assert.deepEqual(envFileNotes("/e", parseEnvFile("PORT=1\n"), 0o100600), []);
  assert.deepEqual(envFileNotes("/e", parseEnvFile("PORT=1\n"), null), []);
});

Deno.test(".env.example, copied to .env as the README says, reads without a warning", async () => {
  const text = await Deno.readTextFile(new URL("../../.env.example", import.meta.url));
  assert.deepEqual(parseEnvFile(text).warnings, []);
});

Deno.test("parseEnvFile names another relay's names for the token and the chat (TELEGRAM_BOT_TOKEN, BOT_TOKEN, TOKEN, CHAT_ID), never their values", () => {
  const file = parseEnvFile(
    [
      "TELEGRAM_BOT_TOKEN=123:secret",
      "BOT_TOKEN=123:secret",
      "TOKEN=123:secret",
      "CHAT_ID=-100",
      "TELEGRAM_CHAT_ID=-100",
      "FORM_SALES_CHAT_ID=-200",
      "GITHUB_SHA=abc",
    ].join("\n"),
  );
  assert.deepEqual(file.warnings.map((w) => [w.line, "closest" in w ? w.closest : undefined]), [
    [1, "MESSENGER_BOT_TOKEN"],
    [2, "MESSENGER_BOT_TOKEN"],
    [3, "MESSENGER_BOT_TOKEN"],
    [4, "MESSENGER_CHAT_ID"],
    [5, "MESSENGER_CHAT_ID"],
  ]);
  assert.ok(!JSON.stringify(file.warnings).includes("secret"));
});

Deno.test("formSettingWarnings names a FORM_<X>_<SETTING> line no form of FORMS reads, with the closest name, never the value", () => {
  const file = parseEnvFile(
    [
      "FORMS=client-b",
      "FORM_CLIENTB_CHAT_ID=222",
      "FORM_CLIENT_B_CHATID=333",
      "FORM_CLIENT_B_TITLE=B",
      "FORM_OTHER_TITLE=x",
    ].join("\n"),
  );
  assert.deepEqual(file.warnings, []);
  assert.deepEqual(formSettingWarnings(file, "client-b"), [
    {
      line: 2,
      problem: "unknown_name",
      name: "FORM_CLIENTB_CHAT_ID",
      closest: "FORM_CLIENT_B_CHAT_ID",
    },
    {
      line: 3,
      problem: "unknown_name",
      name: "FORM_CLIENT_B_CHATID",
      closest: "FORM_CLIENT_B_CHAT_ID",
    },
    { line: 5, problem: "unknown_name", name: "FORM_OTHER_TITLE", closest: "FORM_CLIENT_B_TITLE" },
  ]);
  // Without FORMS no form reads any: the hint is FORMS.
  assert.deepEqual(
    formSettingWarnings(file, undefined).map((warning) => JSON.stringify(warning)),
    ["FORM_CLIENTB_CHAT_ID", "FORM_CLIENT_B_CHATID", "FORM_CLIENT_B_TITLE", "FORM_OTHER_TITLE"]
      .map((name, i) =>
        JSON.stringify({ line: i + 2, problem: "unknown_name", name, closest: "FORMS" })
      ),
  );
  assert.ok(!JSON.stringify(formSettingWarnings(file, "client-b")).includes("222"));
});
