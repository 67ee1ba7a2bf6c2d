/**
 * The command line of the real `main.ts` process.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;

Deno.test("--version prints the version from deno.json, the one place it is kept", async () => {
  const { version } = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  assert.match(version, /^\d+\.\d+\.\d+$/);
  const main = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", `${ROOT}main.ts`, "--version"],
    stdin: "null",
  }).output();
  assert.equal(main.code, 0);
  assert.equal(new TextDecoder().decode(main.stdout), `contactd ${version}\n`);
});
