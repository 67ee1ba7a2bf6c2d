/**
 * Made-up submissions for the spam filter's tests: spam about SEO and crypto from one kind of
 * sender, not-spam about concerts and invoices from another, drawn from a seeded PRNG.
 *
 * @module
 */
import { mulberry32 } from "./random.ts";

const SPAM_WORDS = (
  "seo ranking guaranteed first page google backlinks cheap offer discount crypto bitcoin " +
  "investment profit casino bonus free click now limited deal traffic boost marketing agency"
).split(" ");
const HAM_WORDS = (
  "hello thanks your article question about the concert tickets order invoice meeting " +
  "tomorrow could you please send recipe garden photos weekend family project repository"
).split(" ");
const COMMON = "the a and to of you we is for with this that".split(" ");

/** A submission's text fields, made up. */
export interface MadeUp {
  readonly name: string;
  readonly contact: string;
  readonly message: string;
}

/** A generator of made-up submissions, seeded. */
export function madeUp(seed: number): (spam: boolean) => MadeUp {
  const random = mulberry32(seed);
  const text = (words: readonly string[], length: number) =>
    Array.from({ length }, () => {
      const pool = random() < 0.4 ? COMMON : words;
      return pool[Math.floor(random() * pool.length)]!;
    }).join(" ");
  return (spam) => ({
    message: text(spam ? SPAM_WORDS : HAM_WORDS, 12 + Math.floor(random() * 30)),
    name: spam ? "SEO Expert" : "Ann",
    contact: spam ? "promo@seo-boost.example" : "ann@example.org",
  });
}
