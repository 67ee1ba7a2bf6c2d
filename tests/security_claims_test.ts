/**
 * SECURITY.md names the test behind each claim: a test file by its path (`tests/…_test.ts`),
 * followed by the quoted names of tests (or of cases of a table-driven test) in it. These tests
 * check that every file it names exists and every quoted name is in that file, so renaming or
 * removing a test that a claim rests on fails here until SECURITY.md says what proves it now.
 *
 * @module
 */
import assert from "node:assert/strict";
import { claimedTests, type Literal, literalsOf, nameMatches } from "./support/claims.ts";

const ROOT = new URL("../", import.meta.url);
const security = Deno.readTextFileSync(new URL("SECURITY.md", ROOT));
const claims = claimedTests(security);

Deno.test("SECURITY.md names test files by their path under tests/, each of which exists", () => {
  assert.ok(claims.length >= 40, `only ${claims.length} test references found`);
  const missing = claims.map((claim) => claim.file).filter((file) => {
    try {
      return !Deno.statSync(new URL(file, ROOT)).isFile;
    } catch {
      return true;
    }
  });
  assert.deepEqual([...new Set(missing)], []);
  const bare = [...security.matchAll(/`([^`\s]*_test\.ts)`/g)].map((match) => match[1]!)
    .filter((file) => !file.startsWith("tests/"));
  assert.deepEqual(bare, [], "name test files by their path, e.g. `tests/http/handler_test.ts`");
});

Deno.test("every test name SECURITY.md quotes is a test (or a case of one) in the file it names", () => {
  const unknown: string[] = [];
  let names = 0;
  for (const { file, names: quoted } of claims) {
    let literals: Literal[];
    try {
      literals = literalsOf(Deno.readTextFileSync(new URL(file, ROOT)));
    } catch {
      continue; // a missing file fails the test above
    }
    for (const name of quoted) {
      names++;
      if (!literals.some((literal) => nameMatches(name, literal))) {
        unknown.push(`${file}: "${name}"`);
      }
    }
  }
  assert.ok(names >= 80, `only ${names} quoted test names found`);
  assert.deepEqual(unknown, []);
});

Deno.test("the claim parser reads a file's quoted names up to the next reference", () => {
  const text = 'Lies are refused — `tests/a_test.ts`: "first rule", "second rule"; `tests/e2e/' +
    'b_test.ts`: "e2e: a long\n  name that wraps". Prose "not a test" after a full stop.';
  assert.deepEqual(claimedTests(text), [
    { file: "tests/a_test.ts", names: ["first rule", "second rule"] },
    { file: "tests/e2e/b_test.ts", names: ["e2e: a long name that wraps"] },
  ]);
});

Deno.test("a quoted name matches a string or template literal of the file, … as a prefix", () => {
  const literals = literalsOf(
    'Deno.test("plain rule", () => {});\n' +
      "const cases = [{ name: 'a case' }];\n" +
      'Deno.test(`e2e: fault "${fault.name}" answers ${fault.ok ? "200" : "502"}`, f);\n' +
      '// a comment with "quotes" is no literal\n',
  );
  assert.ok(nameMatches("plain rule", literals[0]!));
  assert.ok(literals.some((literal) => nameMatches("a case", literal)));
  assert.ok(literals.some((literal) => nameMatches('e2e: fault "500" answers 502', literal)));
  assert.ok(literals.some((literal) => nameMatches("plain …", literal)));
  assert.ok(!literals.some((literal) => nameMatches("plain rule renamed", literal)));
  assert.ok(!literals.some((literal) => nameMatches("quotes", literal)));
  assert.ok(!literals.some((literal) => nameMatches("e2e: fault answers", literal)));
});
