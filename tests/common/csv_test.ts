import assert from "node:assert/strict";
import {
  CSV_LINE_BREAK,
  csvField,
  csvRow,
  FORMULA_PREFIXES,
  neutraliseFormula,
} from "../../lib/common/csv.ts";

Deno.test("csvField quotes a value holding a quote, comma, CR or LF and doubles its quotes (RFC 4180)", () => {
  assert.equal(csvField("plain text"), "plain text");
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField("a,b"), '"a,b"');
  assert.equal(csvField("line 1\nline 2"), '"line 1\nline 2"');
  assert.equal(csvField("line 1\r\nline 2"), '"line 1\r\nline 2"');
  assert.equal(csvField(""), "");
  assert.equal(CSV_LINE_BREAK, "\r\n");
});

Deno.test("csvField neutralises spreadsheet formula prefixes (=, +, -, @, tab, CR) with a leading '", () => {
  assert.deepEqual([...FORMULA_PREFIXES], ["=", "+", "-", "@", "\t", "\r"]);
  assert.equal(csvField('=HYPERLINK("http://x")'), '"\'=HYPERLINK(""http://x"")"');
  assert.equal(csvField("+1 555"), "'+1 555");
  assert.equal(csvField("-2+3"), "'-2+3");
  assert.equal(csvField("@SUM(A1)"), "'@SUM(A1)");
  assert.equal(csvField("\t=1"), "'\t=1");
  assert.equal(csvField("\r=1"), '"\'\r=1"');
  // Only the first character counts.
  assert.equal(csvField("a=b"), "a=b");
  assert.equal(neutraliseFormula("=1"), "'=1");
  assert.equal(neutraliseFormula("'=1"), "'=1");
});

Deno.test("csvRow joins the fields with commas, each escaped", () => {
  assert.equal(csvRow(["a", "b,c", "=d", ""]), 'a,"b,c",\'=d,');
});
