import assert from "node:assert/strict";
import {
  ConfigError,
  GENERAL_TOPIC_ID,
  parseConfig,
  parseTopicId,
} from "../../lib/config/config.ts";

const MESSENGER = { MESSENGER_BOT_TOKEN: "123456:ABC-def_ghi", MESSENGER_CHAT_ID: "-100123" };

Deno.test("MESSENGER_TOPIC_ID sends the default form into a forum topic; unset, none", () => {
  assert.equal(parseConfig(MESSENGER).messenger?.topicId, undefined);
  assert.equal(parseConfig({ ...MESSENGER, MESSENGER_TOPIC_ID: " 42 " }).messenger?.topicId, 42);
  assert.equal(parseConfig({ ...MESSENGER, MESSENGER_TOPIC_ID: "" }).messenger?.topicId, undefined);
});

Deno.test("MESSENGER_TOPIC_ID refuses the General topic at start, with what to do instead", () => {
  assert.equal(GENERAL_TOPIC_ID, 1);
  assert.throws(
    () => parseConfig({ ...MESSENGER, MESSENGER_TOPIC_ID: "1" }),
    (error: unknown) =>
      error instanceof ConfigError && error.setting === "MESSENGER_TOPIC_ID" &&
      /General topic.*leave it unset/.test(error.message),
  );
});

Deno.test("MESSENGER_TOPIC_ID must be a positive integer", () => {
  for (const bad of ["0", "-5", "4.2", "abc", "1e3", "9007199254740993", "0x10"]) {
    assert.throws(() => parseTopicId(bad), ConfigError, bad);
  }
  assert.equal(parseTopicId("2"), 2);
});
