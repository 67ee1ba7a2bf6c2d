/**
 * The command line's outside world faked for the data commands' tests: what they print, the
 * permissions they give up; every part replaceable.
 *
 * @module
 */
import type { CliIo } from "../../lib/cli/cli.ts";

/** A {@linkcode CliIo} with `overrides`, and what it was told. */
export function fakeCliIo(overrides: Partial<CliIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const revoked: string[] = [];
  const io: CliIo = {
    version: "1.2.3",
    env: () => undefined,
    readTextFile: (path) => Promise.reject(new Deno.errors.NotFound(path)),
    fetch: () => Promise.reject(new Error("no network")),
    now: () => new Date(0),
    granted: () => true,
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    serve: () => Promise.reject(new Error("not serve")),
    revoke: (name) => revoked.push(name),
    pid: 777,
    ...overrides,
  };
  return { io, out, err, revoked };
}
