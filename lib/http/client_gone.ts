/**
 * A request body's read that failed because the client went away (a closed tab, a phone losing
 * its signal, a reset), told apart from a real error.
 *
 * @module
 */

/**
 * The errors Deno's HTTP server gives a body read when the client's side of it ended before its
 * end: the connection closed (`BadResource`: "Cannot read request body as underlying resource
 * unavailable"), reset or aborted, or the HTTP layer's own complaint about it (`Http`: "unexpected
 * EOF while reading HTTP/1 body", a malformed chunk).
 */
const CLIENT_GONE: readonly (abstract new (...args: never[]) => Error)[] = [
  Deno.errors.BadResource,
  Deno.errors.Http,
  Deno.errors.ConnectionReset,
  Deno.errors.ConnectionAborted,
  Deno.errors.BrokenPipe,
  Deno.errors.UnexpectedEof,
  Deno.errors.Interrupted,
];

/**
 * True when `error`, thrown by reading a request's body, says the client went away: nothing went
 * wrong on this side, and nobody is left to answer. Anything else (a `TypeError`, a file system's
 * error, something not an `Error`) is a real error.
 */
export function clientGone(error: unknown): boolean {
  return CLIENT_GONE.some((kind) => error instanceof kind);
}
