import assert from "node:assert/strict";
import { clientGone } from "../../lib/http/client_gone.ts";

Deno.test("a body read that failed because the client closed, reset or cut its connection is the client gone", () => {
  for (
    const error of [
      // What Deno.serve gives a body whose client closed the connection mid-body.
      new Deno.errors.BadResource("Cannot read request body as underlying resource unavailable"),
      // ...and one whose client reset it (SO_LINGER 0).
      new Deno.errors.Http("unexpected EOF while reading HTTP/1 body"),
      new Deno.errors.ConnectionReset("Connection reset by peer"),
      new Deno.errors.ConnectionAborted("Connection aborted"),
      new Deno.errors.BrokenPipe("Broken pipe"),
      new Deno.errors.UnexpectedEof("unexpected end of file"),
      new Deno.errors.Interrupted("operation canceled"),
    ]
  ) {
    assert.equal(clientGone(error), true, error.name);
  }
});

Deno.test("any other error of a body read is a real error, not the client gone", () => {
  for (
    const error of [
      new TypeError("Cannot read properties of undefined"),
      new RangeError("Array buffer allocation failed"),
      new Error("BadResource"),
      new Deno.errors.PermissionDenied("write denied"),
      new Deno.errors.NotFound("spool gone"),
      "BadResource: Cannot read request body",
      undefined,
      null,
    ]
  ) {
    assert.equal(clientGone(error), false, String(error));
  }
});
