/**
 * Test helper: an ALTCHA challenge (as `GET /api/challenge` answers it) solved with altcha-lib's
 * own solver and encoded as the widget's payload.
 *
 * @module
 */
import assert from "node:assert/strict";
import { solveChallenge } from "altcha-lib/v1";

/** The fields of an issued challenge the payload carries. */
export interface IssuedAltcha {
  readonly algorithm: string;
  readonly challenge: string;
  readonly maxnumber: number;
  readonly salt: string;
  readonly signature: string;
}

/** The widget's base64 payload for `challenge`, solved here. */
export async function solvedAltcha(challenge: IssuedAltcha): Promise<string> {
  const solution = await solveChallenge(
    challenge.challenge,
    challenge.salt,
    challenge.algorithm,
    challenge.maxnumber,
  ).promise;
  assert.ok(solution !== null);
  return btoa(JSON.stringify({ ...challenge, number: solution.number, took: solution.took }));
}
