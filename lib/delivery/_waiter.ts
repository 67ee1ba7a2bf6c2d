/**
 * A sender waiting for the outcome of its submission, as a two-state machine: **waiting** (with
 * the way to answer it and the cancel of its deadline) until it is **answered**, once. The send
 * queue (lib/delivery/queue.ts) asks {@linkcode Waiter.waiting} instead of keeping a nullable
 * callback.
 *
 * @module
 */

type WaiterState<T> =
  | { readonly state: "waiting"; readonly resolve: (value: T) => void; cancel: () => void }
  | { readonly state: "answered" };

/** One waiting sender; see the module documentation. */
export class Waiter<T> {
  #state: WaiterState<T>;

  /** A sender answered through `resolve`. */
  constructor(resolve: (value: T) => void) {
    this.#state = { state: "waiting", resolve, cancel: () => {} };
  }

  /** Whether the sender still waits for its answer. */
  get waiting(): boolean {
    return this.#state.state === "waiting";
  }

  /** Sets what answering cancels (the deadline's timer); nothing once answered. */
  onAnswer(cancel: () => void): void {
    if (this.#state.state === "waiting") this.#state.cancel = cancel;
  }

  /** waiting → answered: answers with `value` and cancels the deadline. False if answered before. */
  answer(value: T): boolean {
    const state = this.#state;
    if (state.state !== "waiting") return false;
    this.#state = { state: "answered" };
    state.cancel();
    state.resolve(value);
    return true;
  }
}
