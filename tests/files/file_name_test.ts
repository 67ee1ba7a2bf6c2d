import assert from "node:assert/strict";
import { cleanFileName, FILE_NAME_MAX, UNNAMED_FILE } from "../../lib/files/file_name.ts";

Deno.test("a sender's file name becomes a label: no path, no control or bidi characters, no leading dots", () => {
  assert.equal(cleanFileName("C:\\Users\\ann\\cv.pdf"), "cv.pdf");
  assert.equal(cleanFileName("../../etc/passwd"), "passwd");
  assert.equal(cleanFileName("invoice\u202Efdp.exe"), "invoicefdp.exe");
  assert.equal(cleanFileName("a\r\nb\u0000c.txt"), "abc.txt");
  assert.equal(cleanFileName("..hidden"), "hidden");
  assert.equal(cleanFileName("  two   spaces .pdf "), "two spaces .pdf");
  assert.equal(cleanFileName("cafe\u0301.png"), "café.png");
  assert.equal(cleanFileName(""), UNNAMED_FILE);
  assert.equal(cleanFileName("/"), UNNAMED_FILE);
  assert.equal([...cleanFileName("x".repeat(500))].length, FILE_NAME_MAX);
});
