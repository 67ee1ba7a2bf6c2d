/**
 * Running tasks one after another, in call order: the writes of a file that must never overlap.
 *
 * @module
 */

/** Runs a task after every task given before it has settled; resolves or rejects as it does. */
export type Serial = <T>(task: () => Promise<T>) => Promise<T>;

/**
 * A new {@linkcode Serial}. A task's failure reaches its caller only: the next task runs after
 * it all the same.
 */
export function serial(): Serial {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const run = tail.then(task);
    tail = run.then(_settled, _settled);
    return run;
  };
}

function _settled(): void {}
