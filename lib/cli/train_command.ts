/**
 * `contactd train`: teaches the learned spam filter (lib/spam/spam_filter.ts) from labelled
 * history read on standard input, so a new install need not wait for presses. Two forms:
 *
 * - `contactd train < labelled.jsonl`: JSON lines, each a record as `contactd export` prints it
 *   (or any object with a `message`, and optionally `name`, `contact`, `fields`, `id`, `ts`) with
 *   `"label":"spam"` or `"label":"ham"` added; lines without a valid label are skipped, counted.
 * - `contactd train --label spam|ham < texts`: plain texts, one example, or several separated by
 *   NUL bytes (`for f in spam/*; do cat "$f"; printf '\0'; done | contactd train --label spam`).
 *
 * Each example is taught as a press would teach it, through the database's own connection: a
 * record's `id` names its lesson (so `forget --id` takes it back, and a later press on that
 * submission replaces it), a text's lesson is named by its digest (teaching the same text again
 * changes nothing). A running service takes it in within a second (its refresh).
 *
 * @module
 */
import { isRecord } from "../common/json.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { dayOf } from "../learn/classifier.ts";
import { features } from "../learn/features.ts";
import type { TokenSource } from "../learn/tokens.ts";
import { MAX_MODEL_TOKENS } from "../spam/spam_filter.ts";
import { call, databasePath, openLocalStore } from "../storage/store.ts";
import type { Settings } from "../config/settings.ts";
import { CommandFailure, type CommandIo, run } from "./commands.ts";
import { messagesFileOf } from "./export_command.ts";

/** The labels `--label` and a line's `label` take. */
export const TRAIN_LABELS = ["spam", "ham"] as const;

/** `train`'s options, already checked by the command line. */
export interface TrainOptions {
  /** Plain texts of this label on standard input; absent: labelled JSON lines. */
  readonly label?: typeof TRAIN_LABELS[number];
}

/** At most this many bytes of standard input are read (64 MiB). */
export const TRAIN_INPUT_MAX = 64 * 1024 * 1024;

/** One example to teach. */
export interface TrainingExample {
  /** Its lesson's name: a record's id, or `text:` and the text's digest. */
  readonly submission: string;
  readonly ts: string;
  readonly label: "spam" | "ham";
  readonly source: TokenSource;
}

/** What {@linkcode trainingExamples} read: the examples, and the parts skipped. */
export interface TrainingInput {
  readonly examples: TrainingExample[];
  readonly skipped: number;
}

/** The SHA-256 of `text`, in hex, cut to 24 digits: a text example's lesson name. */
async function _digest(text: string): Promise<string> {
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(bytes)].slice(0, 12).map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * A line's `ts` as the record writes it, for retention's cut: a time that cannot be read, or one
 * after `now`, is `now` (a lesson must never outlive `RETENTION` by a date that sorts late).
 */
function _received(value: unknown, now: Date): string {
  const ms = typeof value === "string" ? Date.parse(value) : NaN;
  return formatTimestamp(Number.isNaN(ms) || ms > now.getTime() ? now : new Date(ms));
}

/** The string fields of an object, or `undefined` when it is no object of strings. */
function _fields(value: unknown): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined;
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] =>
      typeof entry[1] === "string"
    ),
  );
}

/**
 * The examples of standard input's `text`: with `label`, NUL-separated plain texts (blank ones
 * skipped); without, JSON lines with a `label` (others skipped, counted). `now` dates the texts.
 */
export async function trainingExamples(
  text: string,
  label: TrainOptions["label"],
  now: Date,
): Promise<TrainingInput> {
  const examples: TrainingExample[] = [];
  let skipped = 0;
  const ts = formatTimestamp(now);
  if (label !== undefined) {
    for (const part of text.split("\u0000")) {
      if (part.trim() === "") continue;
      examples.push({
        submission: `text:${await _digest(part)}`,
        ts,
        label,
        source: { message: part },
      });
    }
    return { examples, skipped };
  }
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    if (!isRecord(value) || typeof value.message !== "string") {
      skipped++;
      continue;
    }
    const given = value.label;
    if (given !== "spam" && given !== "ham") {
      skipped++;
      continue;
    }
    const fields = _fields(value.fields);
    examples.push({
      submission: typeof value.id === "string" && value.id !== ""
        ? value.id
        : `text:${await _digest(line)}`,
      ts: _received(value.ts, now),
      label: given,
      source: {
        message: value.message,
        ...(typeof value.name === "string" ? { name: value.name } : {}),
        ...(typeof value.contact === "string" ? { contact: value.contact } : {}),
        ...(fields === undefined ? {} : { fields }),
      },
    });
  }
  return { examples, skipped };
}

/**
 * Examples taught per transaction: each holds the database's write lock, so a sender of the
 * running service waits at most for one such batch (milliseconds), not for the whole input.
 */
export const TRAIN_BATCH = 50;

/** What `train` reads beyond the other commands: standard input, whole. */
export interface TrainIo extends CommandIo {
  /** Standard input as text, at most {@linkcode TRAIN_INPUT_MAX} bytes; `undefined` when more. */
  readonly readInput: () => Promise<string | undefined>;
}

/**
 * `contactd train`: reads the examples on standard input (`readInput`) and teaches them; prints
 * how many of each label were taught, how many were known already, and how many skipped.
 */
export const trainCommand = (
  settings: Settings,
  io: TrainIo,
  options: TrainOptions,
) =>
  run<TrainIo>("train", async (settings, io) => {
    const text = await io.readInput();
    if (text === undefined) {
      throw new CommandFailure(
        `standard input is over ${TRAIN_INPUT_MAX / 1024 / 1024} MiB: train it in parts`,
      );
    }
    const { examples, skipped } = await trainingExamples(text, options.label, io.now());
    if (examples.length === 0) {
      throw new CommandFailure(
        options.label === undefined
          ? 'nothing to learn: give JSON lines with "label":"spam" or "label":"ham" ' +
            "(or --label spam|ham and plain texts) on standard input"
          : "nothing to learn: standard input is empty",
      );
    }
    const path = databasePath(messagesFileOf(settings));
    let store;
    try {
      // Created when missing: training before the first start is allowed.
      store = openLocalStore(path, { create: true });
    } catch (error) {
      throw new CommandFailure(`cannot open ${path}: ${(error as Error).message}`);
    }
    let taught = 0;
    try {
      const day = dayOf(io.now().getTime());
      for (let i = 0; i < examples.length; i += TRAIN_BATCH) {
        const batch = examples.slice(i, i + TRAIN_BATCH).map((example) => ({
          submission: example.submission,
          ts: example.ts,
          label: example.label,
          tokens: features(example.source),
        }));
        // Bounded as the service bounds it, in the same commit: a running service never loads more.
        const [count] = await store.transaction([
          call("spam.train", { examples: batch, day }),
          call("spam.prune", { maxTokens: MAX_MODEL_TOKENS }),
        ]);
        taught += count as number;
      }
      const totals = (await store.run("spam.model", undefined)).totals;
      io.out(
        `taught ${taught} example(s) (${examples.length - taught} known already, ${skipped} ` +
          `skipped); the filter has learnt ${totals.spam} spam and ${totals.ham} other ` +
          "submissions (a running contactd takes it in within a second)",
      );
    } catch (error) {
      throw new CommandFailure(`cannot use ${path}: ${(error as Error).message}`);
    } finally {
      await store.close();
    }
  })(settings, io);
