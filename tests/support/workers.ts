/**
 * The store's worker within a test's reach: each `Worker` started meanwhile is kept, so a test
 * can end the database's worker as a defect would (a message its code cannot read throws,
 * uncaught), with no hook in the service.
 *
 * @module
 */

/** Runs `start` with each Worker it starts kept in `workers` (the store's among them). */
export async function keepingWorkers<T>(
  start: () => Promise<T>,
): Promise<{ started: T; workers: Worker[] }> {
  const Original = globalThis.Worker;
  const workers: Worker[] = [];
  globalThis.Worker = class extends Original {
    constructor(...args: ConstructorParameters<typeof Worker>) {
      super(...args);
      workers.push(this);
    }
  };
  try {
    return { started: await start(), workers };
  } finally {
    globalThis.Worker = Original;
  }
}

/** Ends `worker` as a defect in its code would: a message it cannot read throws, uncaught. */
export function crash(worker: Worker): void {
  worker.postMessage(null);
}
