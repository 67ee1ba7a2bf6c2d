import assert from "node:assert/strict";
import {
  ConfigError,
  formSettingName,
  formSettingNames,
  parseConfig,
} from "../../lib/config/config.ts";
import { mergeSettings, parseEnvFile, readSettings } from "../../lib/config/settings.ts";

const BASE = {
  MESSENGER_BOT_TOKEN: "123456:ABC-def_ghi",
  MESSENGER_CHAT_ID: "-100123",
  MESSENGER_TOPIC_ID: "7",
  ALLOWED_ORIGINS: "https://example.org",
};

function refused(env: Record<string, string>, setting: string, pattern: RegExp) {
  assert.throws(
    () => parseConfig({ ...BASE, ...env }),
    (error: unknown) =>
      error instanceof ConfigError && error.setting === setting && pattern.test(error.message),
  );
}

Deno.test("FORMS names extra forms; FORM_<ID>_* is the id upper-cased with - as _", () => {
  assert.equal(formSettingName("sales-eu", "CHAT_ID"), "FORM_SALES_EU_CHAT_ID");
  assert.deepEqual(parseConfig(BASE).forms, []);
  const config = parseConfig({
    ...BASE,
    FORMS: " support , sales-eu ",
    FORM_SALES_EU_CHAT_ID: "-100999",
    FORM_SALES_EU_TOPIC_ID: "3",
    FORM_SALES_EU_ALLOWED_ORIGINS: "https://shop.example",
    FORM_SALES_EU_TITLE: "Sales (EU)",
  });
  assert.deepEqual(config.forms, [
    {
      id: "support",
      chatId: -100123,
      topicId: 7,
      allowedOrigins: ["https://example.org"],
      title: "support",
      attachmentBytes: 0,
    },
    {
      id: "sales-eu",
      chatId: -100999,
      topicId: 3,
      allowedOrigins: ["https://shop.example"],
      title: "Sales (EU)",
      attachmentBytes: 0,
    },
  ]);
});

Deno.test("a form with a chat of its own takes no topic from the service's chat", () => {
  const [form] = parseConfig({ ...BASE, FORMS: "a", FORM_A_CHAT_ID: "555" }).forms;
  assert.deepEqual([form!.chatId, form!.topicId], [555, undefined]);
});

Deno.test("a form whose FORM_<ID>_CHAT_ID is the service's chat keeps MESSENGER_TOPIC_ID", () => {
  const [form] = parseConfig({ ...BASE, FORMS: "a", FORM_A_CHAT_ID: "-100123" }).forms;
  assert.deepEqual([form!.chatId, form!.topicId], [-100123, 7]);
});

Deno.test("FORMS refuses a malformed or repeated id, and each form setting is checked by name", () => {
  for (const bad of ["Sales", "a_b", "-a", "a-", "x".repeat(33), "a b"]) {
    refused({ FORMS: bad }, "FORMS", /form ids/);
  }
  refused({ FORMS: "a,a" }, "FORMS", /twice/);
  // "default" names the default form (contactd export --form default): never a FORMS id.
  refused({ FORMS: "sales,default" }, "FORMS", /cannot name a form default/);
  refused({ FORMS: "a", FORM_A_CHAT_ID: "x" }, "FORM_A_CHAT_ID", /non-zero integer/);
  refused({ FORMS: "a", FORM_A_TOPIC_ID: "1" }, "FORM_A_TOPIC_ID", /General topic/);
  refused(
    { FORMS: "a", FORM_A_ALLOWED_ORIGINS: "example.org" },
    "FORM_A_ALLOWED_ORIGINS",
    /item 1/,
  );
  refused({ FORMS: "a", FORM_A_TITLE: "two\nlines" }, "FORM_A_TITLE", /one line/);
  refused({ FORMS: "a", FORM_A_TITLE: "t".repeat(101) }, "FORM_A_TITLE", /at most 100/);
});

Deno.test("the forms' own settings are read from the environment and the env file, nothing else", () => {
  assert.deepEqual(formSettingNames("a,Bad!,b-c"), [
    "FORM_A_CHAT_ID",
    "FORM_A_TOPIC_ID",
    "FORM_A_ALLOWED_ORIGINS",
    "FORM_A_TITLE",
    "FORM_A_ATTACHMENTS",
    "FORM_B_C_CHAT_ID",
    "FORM_B_C_TOPIC_ID",
    "FORM_B_C_ALLOWED_ORIGINS",
    "FORM_B_C_TITLE",
    "FORM_B_C_ATTACHMENTS",
  ]);
  const asked: string[] = [];
  const env: Record<string, string> = { FORM_B_CHAT_ID: "2", FORM_A_TITLE: "A", FORM_Z_TITLE: "z" };
  const fromProcess = readSettings((name) => (asked.push(name), env[name]), "b");
  assert.ok(!asked.includes("FORM_Z_TITLE"));
  // FORMS in the file names b; its chat is in the process environment.
  const file = parseEnvFile("FORMS=b\nFORM_B_TITLE=Bee\nFORM_C_TITLE=not named\n");
  assert.deepEqual(file.warnings, []);
  const merged = mergeSettings(file.values, fromProcess);
  assert.deepEqual(merged, { FORMS: "b", FORM_B_CHAT_ID: "2", FORM_B_TITLE: "Bee" });
});
