/**
 * A minimal RFC 4180 reader for the tests: what a spreadsheet does with `contactd export
 * --format csv`. Fails unless the text ends with CRLF.
 *
 * @module
 */
import assert from "node:assert/strict";

/**
 * The rows of `text`, each a list of fields, quotes undone; a leading UTF-8 byte-order mark is
 * taken as the encoding's, as spreadsheets take it, not as part of the first field.
 */
export function parseCsv(csv: string): string[][] {
  const text = csv.startsWith("\uFEFF") ? csv.slice(1) : csv;
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"', i++);
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") (row.push(field), field = "");
    else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += c;
  }
  assert.equal(field + row.join(""), "", "the text ends with CRLF");
  return rows;
}

/** The rows after the header as objects keyed by the header's names. */
export function csvObjects(text: string): Array<Record<string, string>> {
  const [header, ...rows] = parseCsv(text);
  return rows.map((row) => Object.fromEntries(row.map((value, i) => [header![i]!, value])));
}
