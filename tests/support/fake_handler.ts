/**
 * The pure handler for the hostile-input and fuzz tests: {@linkcode setup}'s fakes, plus
 * switches that make delivery or the backup write fail, and a body deadline that never fires
 * (every test body is complete).
 *
 * @module
 */
import { setup } from "./handler_setup.ts";

export { PEER as PROXY } from "./handler_setup.ts";

/** A fresh handler trusting 127.0.0.1/8 as proxy, with the real limit of 5 per minute. */
export function fakeHandler() {
  const faults = { deliverFails: false, appendFails: false };
  const lines: string[] = [];
  const { handler, state } = setup({
    deliver: () =>
      Promise.resolve(
        faults.deliverFails ? { ok: false, error: "500 Internal Server Error" } : { ok: true },
      ),
    // Every attempted line is kept, also the ones whose write "fails".
    append: (line) => {
      lines.push(line);
      return faults.appendFails ? Promise.reject(new Error("ENOSPC")) : Promise.resolve();
    },
    // The outbox is on the same disk: it fails with the backup file.
    store: () => faults.appendFails ? Promise.reject(new Error("ENOSPC")) : Promise.resolve(),
    bodyDeadline: () => new AbortController().signal,
  });
  return {
    handler,
    state: Object.assign(faults, { texts: state.texts, logs: state.logs, lines }),
  };
}
