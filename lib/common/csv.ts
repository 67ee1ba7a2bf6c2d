/**
 * CSV as RFC 4180 writes it, made safe to open in a spreadsheet: a value that a spreadsheet
 * would run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is
 * prefixed with `'`, which spreadsheets show as text.
 *
 * @module
 */

/** The first characters that make a spreadsheet read a cell as a formula (OWASP's list). */
export const FORMULA_PREFIXES: readonly string[] = ["=", "+", "-", "@", "\t", "\r"];

/**
 * The UTF-8 byte-order mark: written before the header, it makes LibreOffice's default import and
 * Excel's double-click read the file as UTF-8 (without it, `Zoë` opens as `ZoÃ«`).
 */
export const UTF8_BOM = "\uFEFF";

/** The line break between records (RFC 4180: CRLF). */
export const CSV_LINE_BREAK = "\r\n";

/** `value` with a `'` in front when a spreadsheet would take it for a formula. */
export function neutraliseFormula(value: string): string {
  return FORMULA_PREFIXES.some((prefix) => value.startsWith(prefix)) ? `'${value}` : value;
}

/**
 * One field: neutralised, then quoted (its quotes doubled) when it holds a quote, a comma, a CR
 * or an LF, as RFC 4180 requires.
 */
export function csvField(value: string): string {
  const safe = neutraliseFormula(value);
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** One record: its fields joined by commas, without the line break. */
export function csvRow(values: readonly string[]): string {
  return values.map(csvField).join(",");
}
