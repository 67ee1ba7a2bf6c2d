/**
 * Cloudflare Turnstile: the POST's `cf-turnstile-response` checked at `siteverify`.
 *
 * @module
 */
import type { ChallengeGate, ChallengeVerdict } from "./altcha.ts";
import { readCapped } from "../common/capped_read.ts";

/** Cloudflare's verification endpoint, the default of `TURNSTILE_VERIFY_URL`. */
export const TURNSTILE_VERIFY_URL = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

/** Time limit of one verification. */
export const TURNSTILE_TIMEOUT_MS = 5_000;

/** Largest verification answer read; Cloudflare's are a few hundred bytes. */
export const TURNSTILE_MAX_ANSWER = 16_384;

/** Most verifications in flight at once; beyond them a POST is `503 challenge_unavailable`. */
export const TURNSTILE_MAX_IN_FLIGHT = 32;

/**
 * Cloudflare's documented test secret keys: always passes, always fails, token already spent.
 * Left in production, the first passes every token.
 */
export const TURNSTILE_TEST_SECRETS: ReadonlySet<string> = new Set([
  "1x0000000000000000000000000000000AA",
  "2x0000000000000000000000000000000AA",
  "3x0000000000000000000000000000000AA",
]);

/** True when `secret` is one of {@linkcode TURNSTILE_TEST_SECRETS} (worth a start-up warning). */
export function isTurnstileTestSecret(secret: string): boolean {
  return TURNSTILE_TEST_SECRETS.has(secret);
}

/** Longest token sent on; Cloudflare documents at most 2048 characters. */
const MAX_TOKEN_LENGTH = 2_048;

/** Options of {@linkcode Turnstile}. */
export interface TurnstileOptions {
  /** `CHALLENGE_SECRET`: the widget's secret key. Never logged or answered. */
  readonly secret: string;
  /** `TURNSTILE_VERIFY_URL`. */
  readonly verifyUrl: string;
  readonly fetch: typeof fetch;
  /** Default {@linkcode TURNSTILE_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
  /** Default {@linkcode TURNSTILE_MAX_IN_FLIGHT}. */
  readonly maxInFlight?: number;
  /** Told why a verification could not be made (a reason, never the secret or the token). */
  readonly onOutage?: (reason: string) => void;
}

/**
 * Verifies tokens at `siteverify` (form-encoded `secret`, `response`, `remoteip` = the client
 * address contactd computed). `success: true` passes; `success: false` is `challenge_failed`
 * (unless its `error-codes` blame the service: {@linkcode SERVICE_FAULTS}); those, a timeout, a
 * non-2xx answer, an answer that is not JSON or too large, or a network error is
 * `challenge_unavailable`: never a silent pass. At most `maxInFlight` verifications wait at once;
 * a token beyond them is `challenge_unavailable` at once, without asking (nor `onOutage`).
 */
export class Turnstile implements ChallengeGate {
  readonly field = "cf-turnstile-response" as const;
  readonly #options: TurnstileOptions;
  #inFlight = 0;

  /** Builds the gate; the settings are validated by lib/config/config.ts. */
  constructor(options: TurnstileOptions) {
    this.#options = options;
  }

  /** See {@linkcode Turnstile}. */
  async check(value: unknown, ip: string, _nowMs: number): Promise<ChallengeVerdict> {
    if (value === undefined || value === null || value === "") return "challenge_required";
    if (typeof value !== "string" || value.length > MAX_TOKEN_LENGTH) return "challenge_failed";
    if (this.#inFlight >= (this.#options.maxInFlight ?? TURNSTILE_MAX_IN_FLIGHT)) {
      return "challenge_unavailable";
    }
    this.#inFlight++;
    try {
      return await this.#verify(value, ip);
    } finally {
      this.#inFlight--;
    }
  }

  /** One siteverify call for a well-formed `token`. */
  async #verify(value: string, ip: string): Promise<ChallengeVerdict> {
    const { secret, verifyUrl, timeoutMs = TURNSTILE_TIMEOUT_MS, onOutage } = this.#options;
    const outage = (reason: string): ChallengeVerdict => {
      onOutage?.(reason);
      return "challenge_unavailable";
    };
    let response: Response;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      response = await this.#options.fetch(verifyUrl, {
        method: "POST",
        body: new URLSearchParams({ secret, response: value, remoteip: ip }),
        signal,
        redirect: "error",
      });
    } catch (error) {
      return outage(signal.aborted ? "timeout" : errorName(error));
    }
    let text: string;
    try {
      if (!response.ok) {
        await response.body?.cancel();
        return outage(`status ${response.status}`);
      }
      const read = await readCapped(response, TURNSTILE_MAX_ANSWER);
      if (!read.ok) return outage("answer too large");
      text = new TextDecoder().decode(read.bytes);
    } catch (error) {
      return outage(signal.aborted ? "timeout" : errorName(error));
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      return outage("answer not JSON");
    }
    if (typeof answer !== "object" || answer === null) return outage("answer not an object");
    const { success, "error-codes": codes } = answer as Record<string, unknown>;
    if (success === true) return "passed";
    if (success !== false) return outage("answer without success");
    // Codes that blame the service, not the visitor: a wrong secret, Cloudflare's own fault.
    const blamed = Array.isArray(codes)
      ? codes.find((code) => typeof code === "string" && SERVICE_FAULTS.has(code))
      : undefined;
    return blamed === undefined ? "challenge_failed" : outage(blamed);
  }
}

/** `error-codes` that mean the verification could not be made; the others mean a bad token. */
export const SERVICE_FAULTS: ReadonlySet<string> = new Set([
  "missing-input-secret",
  "invalid-input-secret",
  "internal-error",
]);

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "error";
}
