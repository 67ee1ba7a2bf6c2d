import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sendDocument, type Upload } from "../../lib/bot/document.ts";
import { sendMessage } from "../../lib/bot/api.ts";
import { FAKE_UPLOAD_LIMIT, startFakeBotApi } from "../support/fake_bot_api.ts";

const TOKEN = "123456:test-token";
const CHAT = -100_777;

function upload(bytes: Uint8Array<ArrayBuffer>, name = "cv.pdf"): Upload {
  return {
    name,
    type: "application/pdf",
    size: bytes.length,
    open: () => new Blob([bytes]).stream(),
  };
}

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

Deno.test("sendDocument uploads a file byte for byte as a captioned reply in the chat's topic", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT, floodControl: false });
  try {
    fake.topics.add(5);
    const api = { apiUrl: fake.url, token: TOKEN, timeoutMs: 5000, fetch };
    const sent = await sendMessage(api, CHAT, "notification", 5);
    assert.equal(sent.ok, true);
    const bytes = new Uint8Array(3_000_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 11)) & 0xff;
    const result = await sendDocument(api, CHAT, upload(bytes, 'my "cv".pdf'), {
      topicId: 5,
      replyTo: 1,
      caption: "#abc123",
    });
    assert.equal(result.ok, true);
    const [document] = fake.documents;
    assert.equal(sha(document!.bytes), sha(bytes));
    assert.deepEqual(
      [document!.name, document!.caption, document!.replyTo, document!.topic, document!.type],
      ["my 'cv'.pdf", "#abc123", 1, 5, "application/pdf"],
    );
  } finally {
    await fake.close();
  }
});

Deno.test("sendDocument reports Telegram's refusal of a file over 50 MB or of a type it rejects", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT, floodControl: false });
  try {
    const api = { apiUrl: fake.url, token: TOKEN, timeoutMs: 20_000, fetch };
    const big = await sendDocument(api, CHAT, upload(new Uint8Array(FAKE_UPLOAD_LIMIT + 1)));
    assert.deepEqual(big.ok ? undefined : [big.errorCode], [413]);
    fake.refuseDocument = /\.pdf$/;
    const refused = await sendDocument(api, CHAT, upload(new Uint8Array(10)));
    assert.deepEqual(refused.ok ? undefined : [refused.errorCode, refused.error], [
      400,
      "400 Bad Request: wrong file type",
    ]);
    assert.equal(fake.documents.length, 0);
  } finally {
    await fake.close();
  }
});
