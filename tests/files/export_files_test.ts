import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { copyOut, recordFiles } from "../../lib/files/export_files.ts";

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

Deno.test("export --files copies a record's files as <id>-<n>-<name>, 0600, checked against their sha256", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/spool`);
    await Deno.mkdir(`${dir}/out`);
    const cv = new TextEncoder().encode("%PDF-1.7 cv");
    const photo = new TextEncoder().encode("not the bytes the record names");
    await Deno.writeFile(`${dir}/spool/abc-0`, cv);
    await Deno.writeFile(`${dir}/spool/abc-1`, photo);
    const record = {
      id: "abc",
      files: [
        { name: "../cv.pdf", size: cv.length, type: "application/pdf", sha256: sha(cv) },
        { name: "photo.png", size: 5, type: "image/png", sha256: "00".repeat(32) },
        { name: "gone.txt", size: 5, type: "text/plain", sha256: "11".repeat(32) },
      ],
    };
    const counts = await copyOut(`${dir}/spool`, `${dir}/out`, recordFiles(record));
    assert.deepEqual(counts, { copied: 1, missing: 1, damaged: 1 });
    const names = (await Array.fromAsync(Deno.readDir(`${dir}/out`))).map((e) => e.name);
    assert.deepEqual(names, ["abc-1-cv.pdf"]);
    assert.deepEqual(await Deno.readFile(`${dir}/out/abc-1-cv.pdf`), cv);
    assert.equal((await Deno.stat(`${dir}/out/abc-1-cv.pdf`)).mode! & 0o777, 0o600);
    // Never over a file already there.
    await assert.rejects(copyOut(`${dir}/spool`, `${dir}/out`, recordFiles(record)));
    // A record without files, or with an id that is no id, copies nothing.
    assert.deepEqual(recordFiles({ id: "../x", files: record.files }), []);
    assert.deepEqual(recordFiles({ id: "abc" }), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
