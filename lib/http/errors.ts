/**
 * The one error vocabulary of the API: each code has one status and one default sentence.
 *
 * @module
 */
import type { InvalidCode } from "../form/submission.ts";
import type { FollowUpRefusal } from "../storage/store.ts";

/** Every error code an answer can carry. */
export type ErrorCode =
  | "rate_limited"
  | "payload_too_large"
  | "unsupported_media_type"
  | InvalidCode
  | "invalid_host"
  | "not_found"
  | "method_not_allowed"
  | "origin_not_allowed"
  | "challenge_required"
  | "challenge_failed"
  | "challenge_unavailable"
  | "request_timeout"
  | "stopping"
  | "delivery_failed"
  | "not_configured"
  | "case_closed"
  | "case_waiting"
  | "internal";

/** What an error code means to a client. */
export interface ErrorMeaning {
  readonly status: number;
  /** The default human sentence. */
  readonly message: string;
  /**
   * The message was saved and will be delivered later: no need to send it again. Answers carry
   * `"stored": true` (the example form says so instead of "try again").
   */
  readonly stored?: true;
  /**
   * Formspree's name for the same refusal, where it has one: the `code` of the `errors` list that
   * `POST /api/f/<id>` answers (`@formspree/core` reads it); else the code itself.
   */
  readonly formspree?: string;
}

/** Status, default human sentence and meaning of each code, in one table. */
export const ERRORS: Readonly<Record<ErrorCode, ErrorMeaning>> = {
  rate_limited: { status: 429, message: "Too many messages from your address; try again later." },
  payload_too_large: { status: 413, message: "The request body is larger than 16384 bytes." },
  unsupported_media_type: {
    status: 415,
    message:
      "Send JSON (application/json) or a form (application/x-www-form-urlencoded or multipart/form-data).",
  },
  invalid_json: { status: 400, message: "The request body is not valid JSON." },
  invalid_encoding: { status: 400, message: "The request body is not valid UTF-8." },
  invalid_body: { status: 400, message: "The request body must be a JSON object." },
  field_type: { status: 400, message: "A field has the wrong type.", formspree: "TYPE_TEXT" },
  field_too_long: { status: 400, message: "A field is too long." },
  field_required: {
    status: 400,
    message: "A required field is empty.",
    formspree: "REQUIRED_FIELD_EMPTY",
  },
  field_name: { status: 400, message: "A field's name is not one contactd accepts." },
  too_many_fields: { status: 400, message: "The form sends too many fields." },
  invalid_multipart: { status: 400, message: "The request body is not valid multipart/form-data." },
  file_not_accepted: {
    status: 415,
    message: "Files are not accepted: contactd relays text only.",
    formspree: "NO_FILE_UPLOADS",
  },
  invalid_host: { status: 400, message: "The request's Host header is not valid." },
  not_found: { status: 404, message: "There is nothing at this address." },
  method_not_allowed: { status: 405, message: "This method is not allowed here." },
  origin_not_allowed: { status: 403, message: "This site may not send messages here." },
  challenge_required: {
    status: 403,
    message:
      "This form needs JavaScript to send a message (a spam check runs in the page); turn it on and try again.",
  },
  challenge_failed: {
    status: 403,
    message: "The spam check failed or was already used; reload the page and try again.",
  },
  challenge_unavailable: {
    status: 503,
    message: "The spam check cannot be made right now; your message was not sent, try again later.",
  },
  request_timeout: { status: 408, message: "The request body took too long to arrive." },
  stopping: {
    status: 503,
    message: "The service is restarting; your message was not sent. Send it again in a moment.",
  },
  delivery_failed: {
    status: 502,
    message:
      "Your message was saved and will be delivered shortly; there is no need to send it again.",
    stored: true,
  },
  not_configured: {
    status: 503,
    message:
      "Your message was saved and will be delivered once the messenger is set up; there is no need to send it again.",
    stored: true,
  },
  case_closed: {
    status: 409,
    message: "This conversation is closed: no new messages can be written here.",
  },
  case_waiting: {
    status: 429,
    message:
      "Your messages are waiting for an answer: you can write again once the reply has come.",
  },
  internal: { status: 500, message: "Something went wrong; your message was not accepted." },
};

/**
 * The code of a follow-up the database refused as it committed (lib/storage/store.ts
 * `followUpRefusal`: a post that raced past the case page's own check), answered as that check
 * would: a case gone meanwhile (erased, expired) is `not_found` like any unknown page, one that
 * waits for the owner's reply `case_waiting`.
 */
export const FOLLOW_UP_REFUSALS: Readonly<Record<FollowUpRefusal, ErrorCode>> = {
  case_gone: "not_found",
  case_waiting: "case_waiting",
};
