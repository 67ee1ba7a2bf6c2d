import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../lib/config/config.ts";
import { MAX_ATTACHMENT_BYTES, parseSize } from "../../lib/config/attachments.ts";

Deno.test("attachments are off unless ATTACHMENTS names a size, with the documents and images by default", () => {
  const config = parseConfig({});
  assert.deepEqual(config.attachments, {
    maxBytes: 0,
    kinds: ["pdf", "png", "jpeg", "gif", "webp", "txt"],
  });
  assert.equal(parseConfig({ ATTACHMENTS: "10MB" }).attachments.maxBytes, 10_000_000);
  assert.equal(parseConfig({ ATTACHMENTS: "512kib" }).attachments.maxBytes, 512 * 1024);
});

Deno.test("ATTACHMENTS takes sizes up to 50 MiB in B, KB, MB, KiB and MiB, nothing else", () => {
  assert.equal(parseSize("0"), 0);
  assert.equal(parseSize("1.5MB"), 1_500_000);
  assert.equal(parseSize("50MiB"), MAX_ATTACHMENT_BYTES);
  for (const bad of ["51MiB", "10 GB", "ten", "-1", "1e6", "10M"]) {
    assert.equal(parseSize(bad), undefined, bad);
    assert.throws(() => parseConfig({ ATTACHMENTS: bad }), ConfigError, bad);
  }
});

Deno.test("ATTACHMENT_TYPES lists known kinds only, and never executables", () => {
  assert.deepEqual(
    parseConfig({ ATTACHMENT_TYPES: "PDF, zip,pdf" }).attachments.kinds,
    ["pdf", "zip"],
  );
  for (const bad of ["exe", "executable", "pdf,executable", ","]) {
    assert.throws(() => parseConfig({ ATTACHMENT_TYPES: bad }), ConfigError, bad);
  }
});

Deno.test("a form takes FORM_<ID>_ATTACHMENTS, else ATTACHMENTS", () => {
  const config = parseConfig({
    ATTACHMENTS: "1MB",
    FORMS: "jobs,support",
    FORM_JOBS_ATTACHMENTS: "20MB",
  });
  assert.deepEqual(config.forms.map((form) => [form.id, form.attachmentBytes]), [
    ["jobs", 20_000_000],
    ["support", 1_000_000],
  ]);
  assert.throws(
    () => parseConfig({ FORMS: "jobs", FORM_JOBS_ATTACHMENTS: "lots" }),
    /FORM_JOBS_ATTACHMENTS/,
  );
});
