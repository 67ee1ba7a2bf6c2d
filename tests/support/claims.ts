/**
 * Test helpers for the documents that name tests (SECURITY.md): reading which test files and
 * test names a document names, and the string literals of a test file those names must be.
 *
 * @module
 */

/** A test file a document names, and the test names it quotes right after it. */
export interface ClaimedTests {
  readonly file: string;
  readonly names: readonly string[];
}

/**
 * The test references of a Markdown text: each backquoted path ending `_test.ts`, and the
 * double-quoted names that follow it up to the next reference or the end of the sentence (a
 * full stop outside quotes). Line breaks and their indentation inside a name are one space.
 */
export function claimedTests(markdown: string): ClaimedTests[] {
  const text = markdown.replace(/\s*\n\s*/g, " ");
  const found: ClaimedTests[] = [];
  const reference = /`([^`\s]+_test\.ts)`/g;
  const starts = [...text.matchAll(reference)];
  for (const [i, match] of starts.entries()) {
    const from = match.index + match[0].length;
    const to = starts[i + 1]?.index ?? text.length;
    found.push({ file: match[1]!, names: _quotedNames(text.slice(from, to)) });
  }
  return found;
}

/** The double-quoted strings of `text` before its first full stop outside quotes and code. */
function _quotedNames(text: string): string[] {
  const names: string[] = [];
  let at = 0;
  while (at < text.length) {
    const char = text[at]!;
    if (char === "`") {
      const end = text.indexOf("`", at + 1);
      at = end < 0 ? text.length : end + 1;
    } else if (char === '"') {
      const end = text.indexOf('"', at + 1);
      if (end < 0) break;
      names.push(text.slice(at + 1, end));
      at = end + 1;
    } else if (char === "." && /^\.(\s|$)/.test(text.slice(at, at + 2))) {
      break;
    } else {
      at++;
    }
  }
  return names;
}

/**
 * A string or template literal of TypeScript source: its text, and for a template the regular
 * expression it can produce (each `${…}` any text).
 */
export interface Literal {
  readonly text: string;
  readonly pattern: RegExp;
}

/**
 * The string and template literals of `source` (comments skipped; escapes read as the
 * character they escape, enough for test names).
 */
export function literalsOf(source: string): Literal[] {
  const literals: Literal[] = [];
  const scan = (from: number, closing: string | undefined): number => {
    let at = from;
    let depth = 0;
    while (at < source.length) {
      const char = source[at]!;
      if (source.startsWith("//", at)) {
        const end = source.indexOf("\n", at);
        at = end < 0 ? source.length : end;
      } else if (source.startsWith("/*", at)) {
        const end = source.indexOf("*/", at + 2);
        at = end < 0 ? source.length : end + 2;
      } else if (char === "/" && _regexMayStart(source, at)) {
        at = _skipRegex(source, at);
      } else if (char === '"' || char === "'") {
        let text = "";
        at++;
        while (at < source.length && source[at] !== char) {
          if (source[at] === "\\") at++;
          text += source[at] ?? "";
          at++;
        }
        literals.push({ text, pattern: new RegExp(`^${_escape(text)}$`) });
        at++;
      } else if (char === "`") {
        let text = "";
        let pattern = "";
        at++;
        while (at < source.length && source[at] !== "`") {
          if (source.startsWith("${", at)) {
            at = scan(at + 2, "}");
            text += "${}";
            pattern += ".*";
            continue;
          }
          if (source[at] === "\\") at++;
          text += source[at] ?? "";
          pattern += _escape(source[at] ?? "");
          at++;
        }
        literals.push({ text, pattern: new RegExp(`^${pattern}$`, "s") });
        at++;
      } else if (char === "{") {
        depth++;
        at++;
      } else if (char === "}" && closing === "}" && depth === 0) {
        return at + 1;
      } else {
        if (char === "}") depth--;
        at++;
      }
    }
    return at;
  };
  scan(0, undefined);
  return literals;
}

/**
 * True when a quoted test `name` is what `literal` says: the same text, a text its template
 * can produce, or, for a name ending in `…`, the start of its text.
 */
export function nameMatches(name: string, literal: Literal): boolean {
  if (name.endsWith("…")) {
    const prefix = name.slice(0, -1).trimEnd();
    return prefix.length > 0 && literal.text.startsWith(prefix);
  }
  return literal.pattern.test(name);
}

/** True when a `/` at `at` starts a regular expression literal rather than a division. */
function _regexMayStart(source: string, at: number): boolean {
  const before = /\S?\s*$/.exec(source.slice(Math.max(0, at - 40), at))?.[0].trim() ?? "";
  return before === "" || "(,=:[!&|?{};+-*%<>~^".includes(before);
}

/** The index just after the regular expression literal starting at `at`, its flags included. */
function _skipRegex(source: string, at: number): number {
  let inClass = false;
  for (let i = at + 1; i < source.length; i++) {
    const char = source[i];
    if (char === "\\") i++;
    else if (char === "[") inClass = true;
    else if (char === "]") inClass = false;
    else if (char === "\n") return i;
    else if (char === "/" && !inClass) {
      while (/[a-z]/.test(source[i + 1] ?? "")) i++;
      return i + 1;
    }
  }
  return source.length;
}

function _escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
