/**
 * The disk side of a submission, measured apart: fsync latency of this disk, and appends per
 * second from 16 concurrent callers through the serial appender, the group-commit appender and
 * the floor's unordered write + fsync, on this disk as is and on a simulated slow-sync disk
 * (each fsync delayed by `SLOW_SYNC_MS` on top, as a consumer SSD without power-loss protection
 * or a network volume takes a few milliseconds per flush).
 *
 * @module
 */
import { type Appender, createGroupAppender } from "../lib/storage/group_commit.ts";
import { type TrackedFile, trackFile, type WritableFile } from "../lib/storage/tracked_file.ts";

const CALLERS = 16;

/** The baseline group commit is measured against: one write and one sync per line, in order. */
function createSerialAppender(tracked: TrackedFile): Pick<Appender, "append" | "close"> {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    append(line) {
      const done = queue.then(async () => {
        const { offsets, error } = await tracked.writeLines([line]);
        if (offsets[0] === undefined) throw error;
        return offsets[0];
      });
      queue = done.catch(() => {});
      return done;
    },
    async close() {
      await queue;
      tracked.close();
    },
  };
}
const SECONDS = 1.5;
/** Extra delay per fsync of the simulated slow disk. */
export const SLOW_SYNC_MS = 4;
const LINE = new TextEncoder().encode(JSON.stringify({ message: "x".repeat(300) }) + "\n");
const TEXT = new TextDecoder().decode(LINE);

/** Runs `append` from CALLERS concurrent loops for SECONDS; appends per second. */
async function rate(append: () => Promise<unknown>): Promise<number> {
  const end = performance.now() + SECONDS * 1000;
  let count = 0;
  await Promise.all(Array.from({ length: CALLERS }, async () => {
    while (performance.now() < end) {
      await append();
      count++;
    }
  }));
  return count / SECONDS;
}

function slowed(file: Deno.FsFile, extraMs: number): WritableFile {
  if (extraMs === 0) return file;
  return {
    write: (bytes) => file.write(bytes),
    syncData: async () => {
      await file.syncData();
      await new Promise((resolve) => setTimeout(resolve, extraMs));
    },
    close: () => file.close(),
  };
}

/** Measures and returns a Markdown report. */
export async function measureSync(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "contactd-bench-sync-" });
  const open = () => Deno.open(`${dir}/f`, { append: true, create: true });
  try {
    const file = await open();
    const times: number[] = [];
    for (let i = 0; i < 500; i++) {
      await file.write(LINE);
      const start = performance.now();
      await file.syncData();
      times.push(performance.now() - start);
    }
    file.close();
    times.sort((a, b) => a - b);
    const p = (q: number) => times[Math.floor(q * (times.length - 1))]!.toFixed(3);
    const lines = [
      `fsync (fdatasync) of a ${LINE.byteLength}-byte append on this disk: p50 ${p(0.5)} ms, ` +
      `p99 ${p(0.99)} ms. Appends/s from ${CALLERS} concurrent callers:`,
      "",
      "| disk | floor: unordered write + fsync | serial appender | group commit |",
      "| --- | --- | --- | --- |",
    ];
    for (const extra of [0, SLOW_SYNC_MS]) {
      const results: number[] = [];
      const floorFile = slowed(await open(), extra);
      results.push(
        await rate(async () => {
          await floorFile.write(LINE);
          await floorFile.syncData();
        }),
      );
      floorFile.close();
      for (const make of [createSerialAppender, createGroupAppender]) {
        const opened = { file: slowed(await open(), extra), id: "", endsMidLine: false, size: 0 };
        const appender = make(trackFile(opened));
        results.push(await rate(() => appender.append(TEXT)));
        await appender.close();
      }
      const name = extra === 0 ? "this disk" : `fsync + ${extra} ms`;
      lines.push(`| ${name} | ${results.map((r) => r.toFixed(0)).join(" | ")} |`);
    }
    return lines.join("\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) console.log(await measureSync());
