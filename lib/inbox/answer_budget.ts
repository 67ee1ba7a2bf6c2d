/**
 * How many answers the inbox gives in a chat: per person and per chat within a minute, and the
 * same refusal to the same person only once in {@linkcode ANSWER_LIMITS}' `repeatMs`, so people
 * who are refused, or who ask `/status` 300 times, never spend the chat's budget (a group's 20
 * messages a minute) that notifications need. A small state machine; time is a parameter.
 *
 * @module
 */

/** The limits an {@linkcode AnswerBudget} keeps. */
export interface AnswerLimits {
  /** The same refusal to the same person in the same chat: answered once in this long. */
  readonly repeatMs: number;
  /** Answers to one person in one chat: at most `count` in any `windowMs`. */
  readonly person: { readonly count: number; readonly windowMs: number };
  /** Answers in one chat, everyone together: at most `count` in any `windowMs`. */
  readonly chat: { readonly count: number; readonly windowMs: number };
}

/**
 * The inbox's limits: at most 8 answers a minute in a chat, everyone together, and so for one
 * person (an owner at work: a few replies, `/status`, `/pending`): below the 10 a minute the queue
 * lets calls take of a group's 20 (lib/delivery/pacer.ts), so answers never wait for the budget
 * and the owner's next press is never behind them; the same refusal to the same person once in
 * 10 minutes.
 */
export const ANSWER_LIMITS: AnswerLimits = {
  repeatMs: 600_000,
  person: { count: 8, windowMs: 60_000 },
  chat: { count: 8, windowMs: 60_000 },
};

/** At most this many people (per chat) are remembered; the least recent are forgotten first. */
export const PEOPLE_KEPT = 10_000;

/**
 * What to do about one answer: give it, or not, and why not: `repeat` (the same refusal to the
 * same person lately), `person` (that person's budget is spent), `chat` (the chat's is).
 */
export type AnswerVerdict = "answer" | "repeat" | "person" | "chat";

/** One person in one chat: their answers' times, and the refusals they were given lately. */
interface Person {
  times: number[];
  readonly refusals: Map<string, number>;
}

/** The answers' budgets; see the module documentation. */
export class AnswerBudget {
  readonly #limits: AnswerLimits;
  readonly #people = new Map<string, Person>();
  readonly #chats = new Map<number, number[]>();

  /** A budget keeping `limits` (default {@linkcode ANSWER_LIMITS}). */
  constructor(limits: AnswerLimits = ANSWER_LIMITS) {
    this.#limits = limits;
  }

  /**
   * Whether to answer `person` in `chat` at `now` (monotonic ms), and counts the answer when
   * so. `refusal` names a refusal (its text, say), so the same one is not given again within
   * `repeatMs`; `undefined` for an answer that is no refusal (`/status`).
   */
  take(chat: number, person: number, refusal: string | undefined, now: number): AnswerVerdict {
    const { repeatMs, person: perPerson, chat: perChat } = this.#limits;
    const key = `${chat}:${person}`;
    const known = this.#people.get(key);
    const someone: Person = known ?? { times: [], refusals: new Map() };
    // Most recent last: the least recent is the first to be forgotten.
    this.#people.delete(key);
    this.#people.set(key, someone);
    if (known === undefined && this.#people.size > PEOPLE_KEPT) {
      this.#people.delete(this.#people.keys().next().value!);
    }
    if (refusal !== undefined) {
      const last = someone.refusals.get(refusal);
      if (last !== undefined && now - last < repeatMs) return "repeat";
    }
    someone.times = recent(someone.times, now, perPerson.windowMs);
    if (someone.times.length >= perPerson.count) return "person";
    const chatTimes = recent(this.#chats.get(chat) ?? [], now, perChat.windowMs);
    this.#chats.set(chat, chatTimes);
    if (chatTimes.length >= perChat.count) return "chat";
    someone.times.push(now);
    chatTimes.push(now);
    if (refusal !== undefined) {
      for (const [text, at] of someone.refusals) {
        if (now - at >= repeatMs) someone.refusals.delete(text);
      }
      someone.refusals.set(refusal, now);
    }
    return "answer";
  }
}

/** The times of `times` within the window ending at `now`. */
function recent(times: readonly number[], now: number, windowMs: number): number[] {
  return times.filter((at) => at > now - windowMs);
}
