/**
 * Settings: read from an environment-like record, validated once at start-up.
 *
 * @module
 */
import { type Cidr, parseCidr } from "../common/ip.ts";
import {
  type AttachmentsConfig,
  parseAttachmentSize,
  parseAttachmentTypes,
} from "./attachments.ts";

/**
 * The header a trusted proxy names the client in (`REAL_IP_HEADER`, lower-case): appended
 * `X-Forwarded-For` (nginx `$proxy_add_x_forwarded_for` and most proxies), or `X-Real-IP` set
 * (never passed through) by the proxy itself. lib/net/client_address.ts reads it.
 */
export type RealIpHeader = "x-forwarded-for" | "x-real-ip";

/** The values `REAL_IP_HEADER` accepts (compared case-insensitively), the default first. */
export const REAL_IP_HEADERS: readonly RealIpHeader[] = ["x-forwarded-for", "x-real-ip"];

/** Every setting contactd reads, in the order the docs list them. */
export const SETTING_NAMES = [
  "MESSENGER_BOT_TOKEN",
  "MESSENGER_CHAT_ID",
  "MESSENGER_TOPIC_ID",
  "FORMS",
  "MESSAGES_FILE",
  "HOST",
  "PORT",
  "MESSENGER_API_URL",
  "TRUSTED_PROXIES",
  "REAL_IP_HEADER",
  "MESSENGER_TIMEOUT_MS",
  "DELIVERY_WAIT_MS",
  "DELIVERY_MAX_AGE",
  "RETENTION",
  "ALLOWED_ORIGINS",
  "SERVE_EXAMPLE",
  "RATE_LIMIT",
  "ATTACHMENTS",
  "ATTACHMENT_TYPES",
  "CHALLENGE",
  "CHALLENGE_SECRET",
  "TURNSTILE_VERIFY_URL",
  "CHAT_ACTIONS",
  "CHAT_ACTIONS_BY",
  "SPAM_BLOCK_FOR",
  "SPAM_FILTER",
  "SMTP_URL",
  "SMTP_USER",
  "SMTP_PASSWORD",
  "REPLY_FROM",
  "REPLY_TO",
  "REPLY_LIMIT",
] as const;

/** One of {@linkcode SETTING_NAMES}. */
export type SettingName = typeof SETTING_NAMES[number];

/** Default values of the optional settings. */
export const DEFAULTS = {
  FORMS: "",
  MESSAGES_FILE: "messages.jsonl",
  HOST: "127.0.0.1",
  PORT: "8787",
  MESSENGER_API_URL: "https://api.telegram.org",
  TRUSTED_PROXIES: "127.0.0.1/8,::1",
  REAL_IP_HEADER: "X-Forwarded-For",
  MESSENGER_TIMEOUT_MS: "10000",
  DELIVERY_WAIT_MS: "10000",
  DELIVERY_MAX_AGE: "7d",
  RETENTION: "",
  ALLOWED_ORIGINS: "",
  SERVE_EXAMPLE: "0",
  RATE_LIMIT: "5/60s",
  ATTACHMENTS: "0",
  ATTACHMENT_TYPES: "pdf,png,jpeg,gif,webp,txt",
  CHALLENGE: "none",
  TURNSTILE_VERIFY_URL: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
  CHAT_ACTIONS: "1",
  CHAT_ACTIONS_BY: "members",
  SPAM_BLOCK_FOR: "30d",
  SPAM_FILTER: "mark",
  REPLY_LIMIT: "20/1h",
} as const;

/** `CHAT_ACTIONS_BY`: who in a group chat may press the buttons, send commands and reply. */
export type ChatActionsBy = "members" | "admins";

/**
 * `CHAT_ACTIONS`, `CHAT_ACTIONS_BY`: the buttons, `/status`, `/pending` and replies in the chat
 * (lib/inbox/), read by long polling.
 */
export interface ChatActionsConfig {
  /** `CHAT_ACTIONS=1` (the default): notifications carry buttons and the bot reads updates. */
  readonly enabled: boolean;
  /** Everyone in the chat, or its administrators only. */
  readonly by: ChatActionsBy;
}

/** `SMTP_URL` and the reply settings: how replies to senders go out by email (lib/mail/). */
export interface MailConfig {
  /** `smtps:` (TLS from the start) or `smtp:` (STARTTLS). */
  readonly secure: boolean;
  /** The mail server's host name or IP address (an IPv6 address without brackets). */
  readonly host: string;
  /** Its port: the URL's, else 465 for `smtps:` and 587 for `smtp:`. */
  readonly port: number;
  /** `SMTP_USER`, else the URL's user; absent: no authentication. */
  readonly user?: string;
  /** `SMTP_PASSWORD`, else the URL's password; secret (redacted from every log line). */
  readonly password?: string;
  /** `REPLY_FROM`: the replies' `From`, the site's address. */
  readonly from: string;
  /** `REPLY_TO`: their `Reply-To`, if set. */
  readonly replyTo?: string;
}

/** `CHALLENGE`: the spam challenge a POST must pass, with its secret (never logged). */
export type ChallengeConfig =
  | { readonly kind: "none" }
  | { readonly kind: "altcha"; readonly secret: string }
  | { readonly kind: "turnstile"; readonly secret: string; readonly verifyUrl: string };

/** `RATE_LIMIT`: at most `limit` POSTs per client address in any `windowMs`. */
export interface RateLimit {
  /** POSTs admitted per address in any window, 1 to {@linkcode MAX_RATE_LIMIT}. */
  readonly limit: number;
  /** The window, 1 s to 24 h, in milliseconds. */
  readonly windowMs: number;
}

/**
 * The most POSTs per window `RATE_LIMIT` may allow: the limiter keeps that many times per
 * address (lib/net/rate_limit.ts: 4 bytes each), so the bound keeps its memory bounded.
 */
export const MAX_RATE_LIMIT = 100;

/** The bot credential and chat, present only when both are set. */
export interface Messenger {
  /** Bot token, `<digits>:<chars>`. Never logged. */
  readonly token: string;
  /** Numeric chat id; negative for groups. */
  readonly chatId: number;
  /** `MESSENGER_TOPIC_ID`: the forum topic of the chat (`message_thread_id`); absent: none. */
  readonly topicId?: number;
}

/** The General topic's id: Telegram refuses it as `message_thread_id` (leave the topic unset). */
export const GENERAL_TOPIC_ID = 1;

/** A form id of `FORMS`: lowercase letters, digits and `-`, 1 to 32, not starting or ending in `-`. */
export const FORM_ID = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

/** The name of the default form (the one without an id); `FORMS` cannot name a form so. */
export const RESERVED_FORM_ID = "default";

/** The settings each form of `FORMS` may have, as `FORM_<ID>_<SETTING>`. */
export const FORM_SETTINGS = [
  "CHAT_ID",
  "TOPIC_ID",
  "ALLOWED_ORIGINS",
  "TITLE",
  "ATTACHMENTS",
] as const;

/** A form's own setting, `FORM_<ID>_<SETTING>` (`<ID>` upper-cased, `-` as `_`). */
export type FormSettingName = `FORM_${string}_${typeof FORM_SETTINGS[number]}`;

/** The name of form `id`'s `setting`: `FORM_<ID>_<SETTING>`, `<ID>` upper-cased with `-` as `_`. */
export function formSettingName(
  id: string,
  setting: typeof FORM_SETTINGS[number],
): FormSettingName {
  return `FORM_${id.toUpperCase().replaceAll("-", "_")}_${setting}`;
}

/**
 * The `FORM_<ID>_*` names of the well-formed ids in a `FORMS` value (for reading them from the
 * environment and env files; {@linkcode parseConfig} refuses a malformed id).
 */
export function formSettingNames(forms: string | undefined): FormSettingName[] {
  const ids = (forms ?? "").split(",").map((id) => id.trim()).filter((id) => FORM_ID.test(id));
  return ids.flatMap((id) => FORM_SETTINGS.map((setting) => formSettingName(id, setting)));
}

/** A form of `FORMS`, served at `POST /api/contact/<id>`, its settings resolved. */
export interface FormConfig {
  readonly id: string;
  /** `FORM_<ID>_CHAT_ID`, else `MESSENGER_CHAT_ID`; `undefined` when neither is set. */
  readonly chatId: number | undefined;
  /**
   * `FORM_<ID>_TOPIC_ID`; else, for a form in the service's chat (no `FORM_<ID>_CHAT_ID`, or
   * one equal to `MESSENGER_CHAT_ID`), `MESSENGER_TOPIC_ID` (a topic belongs to its chat: a form
   * with a chat of its own has no topic unless it names one).
   */
  readonly topicId?: number;
  /** `FORM_<ID>_ALLOWED_ORIGINS`, else `ALLOWED_ORIGINS`. */
  readonly allowedOrigins: readonly string[];
  /** `FORM_<ID>_TITLE`, else the id: shown in its notifications' header. */
  readonly title: string;
  /** `FORM_<ID>_ATTACHMENTS`, else `ATTACHMENTS`: its files' bytes per submission (0: none). */
  readonly attachmentBytes: number;
}

/** The longest `FORM_<ID>_TITLE`, in characters. */
export const FORM_TITLE_MAX = 100;

/** Validated configuration. */
export interface Config {
  /** `undefined` while the token or chat id is unset: the service runs, unconfigured. */
  readonly messenger: Messenger | undefined;
  readonly messagesFile: string;
  readonly host: string;
  readonly port: number;
  /** Bot API base without a trailing slash. */
  readonly apiUrl: string;
  /** Peers whose `X-Real-IP`/`X-Forwarded-For` are believed; empty when set to `none`. */
  readonly trustedProxies: readonly Cidr[];
  /** The header a trusted proxy names the client in (lib/net/client_address.ts), lower-case. */
  readonly realIpHeader: RealIpHeader;
  /** Time limit of one Bot API call. */
  readonly timeoutMs: number;
  /** How long a sender waits for its own delivery before being told it comes later. */
  readonly deliveryWaitMs: number;
  /** Undelivered submissions older than this are given up. */
  readonly deliveryMaxAgeMs: number;
  /**
   * `RETENTION`: records (and what else contactd keeps of a submission) older than this are
   * removed, at start and daily (lib/storage/retention.ts); `undefined`: kept for ever.
   */
  readonly retentionMs: number | undefined;
  /**
   * Origins (`scheme://host[:port]`) allowed to post from other sites; empty means no CORS and
   * no `Origin` check.
   */
  readonly allowedOrigins: readonly string[];
  /** Serve `examples/contact.html` at `/` (for trying the service out). */
  readonly serveExample: boolean;
  /** `RATE_LIMIT`: the budget of `POST /api/contact` per client address. */
  readonly rateLimit: RateLimit;
  /** `CHALLENGE`, `CHALLENGE_SECRET`, `TURNSTILE_VERIFY_URL`. */
  readonly challenge: ChallengeConfig;
  /** `FORMS`: the extra forms, in the order named (`POST /api/contact` is the default form). */
  readonly forms: readonly FormConfig[];
  /** `CHAT_ACTIONS`, `CHAT_ACTIONS_BY`. */
  readonly chatActions: ChatActionsConfig;
  /** `SPAM_BLOCK_FOR`: how long marking a message as spam blocks its sender. */
  readonly spamBlockMs: number;
  /** `SPAM_FILTER`: what the learned spam filter does with what looks like spam. */
  readonly spamFilter: SpamFilterMode;
  /** `SMTP_URL` and its companions; `undefined` when `SMTP_URL` is unset (no replies by email). */
  readonly mail: MailConfig | undefined;
  /** `REPLY_LIMIT`: at most this many replies by email in any window. */
  readonly replyLimit: RateLimit;
  /** `ATTACHMENTS` (the default form's; each form has its own) and `ATTACHMENT_TYPES`. */
  readonly attachments: AttachmentsConfig;
}

/** A setting that is present but malformed. The message names the setting and fits one line. */
export class ConfigError extends Error {
  /** The offending setting. */
  readonly setting: SettingName | FormSettingName;
  /** Builds the error for `setting`. */
  constructor(setting: SettingName | FormSettingName, message: string) {
    super(message);
    this.name = "ConfigError";
    this.setting = setting;
  }
}

const TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{1,100}$/;
/**
 * A value holding the next line of an env file whose newline was lost: `NAME=` after
 * whitespace, or a setting's own name followed by `=` where it cannot be the end of a longer
 * name (`8787MESSENGER_BOT_TOKEN=` is one, `/srv/EXPORT=1/` is not).
 */
const SWALLOWED_LINE = new RegExp(
  `\\s[A-Z_][A-Z0-9_]*=|(?:^|[^A-Z_])(?:${SETTING_NAMES.join("|")})=`,
);
const INTEGER = /^-?\d{1,16}$/;

/**
 * `MESSENGER_TOPIC_ID`: a forum topic's `message_thread_id`, a positive integer other than the
 * General topic's ({@linkcode GENERAL_TOPIC_ID}, which Telegram refuses); `undefined` when unset.
 */
export function parseTopicId(
  text: string | undefined,
  setting: "MESSENGER_TOPIC_ID" | FormSettingName = "MESSENGER_TOPIC_ID",
): number | undefined {
  if (text === undefined) return undefined;
  const id = Number(text);
  if (!/^\d{1,15}$/.test(text) || !Number.isSafeInteger(id) || id < 1) {
    throw new ConfigError(
      setting,
      `"${setting}" must be a forum topic's id, a positive integer`,
    );
  }
  if (id === GENERAL_TOPIC_ID) {
    throw new ConfigError(
      setting,
      `"${setting}"=1 is the General topic, which Telegram refuses as a topic: leave ` +
        "it unset to post to General",
    );
  }
  return id;
}

/**
 * Validates settings. Unset or empty values take their defaults; unset token or chat id
 * leave the service unconfigured. Anything present but malformed throws {@linkcode ConfigError}.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  options: ParseOptions = {},
): Config {
  const get = (name: SettingName): string | undefined => {
    const value = env[name]?.trim();
    if (value !== undefined && SWALLOWED_LINE.test(value)) {
      // Never echo the value: the swallowed line may be the bot token's, then unset and so
      // beyond the logs' redaction.
      throw new ConfigError(
        name,
        `"${name}" holds NAME=... after its value: an env file line that lost its newline? ` +
          "Put each setting on a line of its own",
      );
    }
    return value === "" ? undefined : value;
  };

  const token = get("MESSENGER_BOT_TOKEN");
  if (token !== undefined && !TOKEN.test(token)) {
    // Never echo the value: it is a secret, even when malformed.
    throw new ConfigError(
      "MESSENGER_BOT_TOKEN",
      `"MESSENGER_BOT_TOKEN" must look like <digits>:<letters, digits, _ or ->`,
    );
  }
  const chatText = get("MESSENGER_CHAT_ID");
  const chatId = chatText === undefined ? undefined : Number(chatText);
  if (
    chatText !== undefined &&
    (!INTEGER.test(chatText) || !Number.isSafeInteger(chatId) || chatId === 0)
  ) {
    throw new ConfigError("MESSENGER_CHAT_ID", `"MESSENGER_CHAT_ID" must be a non-zero integer`);
  }
  const topicId = parseTopicId(get("MESSENGER_TOPIC_ID"));

  const portText = get("PORT") ?? DEFAULTS.PORT;
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port < 1 || port > 65535) {
    throw new ConfigError("PORT", `"PORT" must be a port number between 1 and 65535`);
  }

  const host = get("HOST") ?? DEFAULTS.HOST;
  if (!/^[A-Za-z0-9.:-]{1,253}$/.test(host)) {
    throw new ConfigError("HOST", `"HOST" must be an IP address or host name`);
  }

  const messagesFile = get("MESSAGES_FILE") ?? DEFAULTS.MESSAGES_FILE;
  if (messagesFile.includes("\0") || messagesFile.includes(",")) {
    // A comma would split the --allow-write list that the launcher derives from this path.
    throw new ConfigError("MESSAGES_FILE", `"MESSAGES_FILE" must be a path without "," or NUL`);
  }

  const challenge = parseChallenge(get, options);
  const serveExample = parseSwitch(
    "SERVE_EXAMPLE",
    get("SERVE_EXAMPLE") ?? DEFAULTS.SERVE_EXAMPLE,
  );
  if (serveExample && challenge.kind !== "none") {
    // The example page has no widget (its lines are commented out, and its Content-Security-Policy
    // loads no script from elsewhere): it could never send. Refused rather than served broken.
    throw new ConfigError(
      "SERVE_EXAMPLE",
      `"SERVE_EXAMPLE"=1 serves a form without the ${challenge.kind} widget, which could never ` +
        `send with CHALLENGE=${challenge.kind}: try the form with CHALLENGE=none, then put the ` +
        "widget in your own page (README, Spam challenge)",
    );
  }

  const deliveryMaxAgeMs = parseDuration(
    "DELIVERY_MAX_AGE",
    get("DELIVERY_MAX_AGE") ?? DEFAULTS.DELIVERY_MAX_AGE,
  );
  const attachments = parseAttachments(get);
  return {
    messenger: token !== undefined && chatId !== undefined
      ? { token, chatId, ...(topicId === undefined ? {} : { topicId }) }
      : undefined,
    messagesFile,
    host,
    port,
    apiUrl: parseApiUrl(get("MESSENGER_API_URL") ?? DEFAULTS.MESSENGER_API_URL),
    challenge,
    trustedProxies: parseTrustedProxies(get("TRUSTED_PROXIES") ?? DEFAULTS.TRUSTED_PROXIES),
    realIpHeader: parseRealIpHeader(get("REAL_IP_HEADER") ?? DEFAULTS.REAL_IP_HEADER),
    timeoutMs: parseMilliseconds(
      "MESSENGER_TIMEOUT_MS",
      get("MESSENGER_TIMEOUT_MS") ?? DEFAULTS.MESSENGER_TIMEOUT_MS,
      100,
      120_000,
    ),
    deliveryWaitMs: parseMilliseconds(
      "DELIVERY_WAIT_MS",
      get("DELIVERY_WAIT_MS") ?? DEFAULTS.DELIVERY_WAIT_MS,
      1000,
      30_000,
    ),
    deliveryMaxAgeMs,
    retentionMs: parseRetention(get("RETENTION"), deliveryMaxAgeMs),
    allowedOrigins: parseAllowedOrigins(get("ALLOWED_ORIGINS") ?? DEFAULTS.ALLOWED_ORIGINS),
    serveExample,
    rateLimit: parseRateLimit(get("RATE_LIMIT") ?? DEFAULTS.RATE_LIMIT),
    chatActions: {
      enabled: parseSwitch("CHAT_ACTIONS", get("CHAT_ACTIONS") ?? DEFAULTS.CHAT_ACTIONS),
      by: parseChatActionsBy(get("CHAT_ACTIONS_BY") ?? DEFAULTS.CHAT_ACTIONS_BY),
    },
    spamBlockMs: parseDuration("SPAM_BLOCK_FOR", get("SPAM_BLOCK_FOR") ?? DEFAULTS.SPAM_BLOCK_FOR),
    spamFilter: parseSpamFilter(get("SPAM_FILTER") ?? DEFAULTS.SPAM_FILTER),
    mail: parseMail(get),
    replyLimit: parseRateLimit(get("REPLY_LIMIT") ?? DEFAULTS.REPLY_LIMIT, "REPLY_LIMIT"),
    attachments,
    forms: formsOf(env, get, { chatId, topicId, attachmentBytes: attachments.maxBytes }),
  };
}

/** `FORMS`, each form's own settings read from `env` (an empty one is unset), over the service's. */
function formsOf(
  env: Readonly<Record<string, string | undefined>>,
  get: (name: SettingName) => string | undefined,
  base: { chatId: number | undefined; topicId: number | undefined; attachmentBytes: number },
): FormConfig[] {
  return parseForms(get("FORMS") ?? DEFAULTS.FORMS, (name) => {
    const value = env[name]?.trim();
    return value === "" ? undefined : value;
  }, {
    ...base,
    allowedOrigins: parseAllowedOrigins(get("ALLOWED_ORIGINS") ?? DEFAULTS.ALLOWED_ORIGINS),
  });
}

/** `ATTACHMENTS` and `ATTACHMENT_TYPES` (lib/config/attachments.ts). */
function parseAttachments(get: (name: SettingName) => string | undefined): AttachmentsConfig {
  const maxBytes = parseAttachmentSize(get("ATTACHMENTS") ?? DEFAULTS.ATTACHMENTS);
  if (typeof maxBytes === "string") {
    throw new ConfigError("ATTACHMENTS", `"ATTACHMENTS" ${maxBytes}`);
  }
  const kinds = parseAttachmentTypes(get("ATTACHMENT_TYPES") ?? DEFAULTS.ATTACHMENT_TYPES);
  if (typeof kinds === "string") {
    throw new ConfigError("ATTACHMENT_TYPES", `"ATTACHMENT_TYPES" ${kinds}`);
  }
  return { maxBytes, kinds };
}

/**
 * `FORMS` and each form's `FORM_<ID>_*` settings; an unset one falls back to the service's
 * ({@linkcode FormConfig}). A malformed or repeated id, or a malformed form setting, throws
 * {@linkcode ConfigError} naming it.
 */
export function parseForms(
  forms: string,
  get: (name: FormSettingName) => string | undefined,
  base: {
    readonly chatId: number | undefined;
    readonly topicId: number | undefined;
    readonly allowedOrigins: readonly string[];
    /** `ATTACHMENTS`, for a form without its own; absent: 0. */
    readonly attachmentBytes?: number;
  },
): FormConfig[] {
  const result: FormConfig[] = [];
  for (const raw of forms.split(",")) {
    const id = raw.trim();
    if (id === "") continue;
    if (!FORM_ID.test(id)) {
      throw new ConfigError(
        "FORMS",
        `"FORMS" must be a comma list of form ids (lowercase letters, digits and "-", at most ` +
          `32); item ${result.length + 1} is not one`,
      );
    }
    if (id === RESERVED_FORM_ID) {
      throw new ConfigError(
        "FORMS",
        `"FORMS" cannot name a form ${RESERVED_FORM_ID}: that name is the default form's ` +
          `(contactd export --form ${RESERVED_FORM_ID}); choose another id`,
      );
    }
    if (result.some((form) => form.id === id)) {
      throw new ConfigError("FORMS", `"FORMS" names the form ${id} twice`);
    }
    const chatName = formSettingName(id, "CHAT_ID");
    const chatText = get(chatName);
    const ownChat = chatText === undefined ? undefined : Number(chatText);
    if (
      chatText !== undefined &&
      (!INTEGER.test(chatText) || !Number.isSafeInteger(ownChat) || ownChat === 0)
    ) {
      throw new ConfigError(chatName, `"${chatName}" must be a non-zero integer`);
    }
    const topicId =
      parseTopicId(get(formSettingName(id, "TOPIC_ID")), formSettingName(id, "TOPIC_ID")) ??
        // The service's chat, named or not, keeps the service's topic.
        (ownChat === undefined || ownChat === base.chatId ? base.topicId : undefined);
    const originsName = formSettingName(id, "ALLOWED_ORIGINS");
    const origins = get(originsName);
    const titleName = formSettingName(id, "TITLE");
    const title = get(titleName) ?? id;
    if ([...title].length > FORM_TITLE_MAX || /[\p{Cc}\u2028\u2029]/u.test(title)) {
      throw new ConfigError(
        titleName,
        `"${titleName}" must be one line of at most ${FORM_TITLE_MAX} characters`,
      );
    }
    const attachmentsName = formSettingName(id, "ATTACHMENTS");
    const ownAttachments = get(attachmentsName);
    const attachmentBytes = ownAttachments === undefined
      ? base.attachmentBytes ?? 0
      : parseAttachmentSize(ownAttachments);
    if (typeof attachmentBytes === "string") {
      throw new ConfigError(attachmentsName, `"${attachmentsName}" ${attachmentBytes}`);
    }
    result.push({
      id,
      chatId: ownChat ?? base.chatId,
      ...(topicId === undefined ? {} : { topicId }),
      allowedOrigins: origins === undefined
        ? base.allowedOrigins
        : parseAllowedOrigins(origins, originsName),
      title,
      attachmentBytes,
    });
  }
  return result;
}

/** Options of {@linkcode parseConfig}. */
export interface ParseOptions {
  /**
   * `false` when secrets are supplied later (`deno task compile` derives permissions from the
   * build's settings, without the secrets): a missing `CHALLENGE_SECRET` is not an error then.
   */
  readonly requireSecrets?: boolean;
}

/**
 * At least 32 random bytes: hex (only `0-9a-f`, either case) of at least 64 characters
 * (`openssl rand -hex 32`), else base64 or base64url of at least 43 (`openssl rand -base64 32`: 44).
 */
const ALTCHA_SECRET = /^[A-Za-z0-9+/=_-]{43,512}$/;
const HEX = /^[0-9a-f]+$/i;
/** Cloudflare's secret keys (`0x4AAA…`, test keys `1x0000…`). */
const TURNSTILE_SECRET = /^[A-Za-z0-9._-]{16,256}$/;

/** `CHALLENGE=none|altcha|turnstile` and what each needs. */
function parseChallenge(
  get: (name: SettingName) => string | undefined,
  options: ParseOptions,
): ChallengeConfig {
  const kind = (get("CHALLENGE") ?? DEFAULTS.CHALLENGE).toLowerCase();
  if (kind !== "none" && kind !== "altcha" && kind !== "turnstile") {
    throw new ConfigError("CHALLENGE", `"CHALLENGE" must be none, altcha or turnstile`);
  }
  const verifyUrl = parseApiUrl(
    get("TURNSTILE_VERIFY_URL") ?? DEFAULTS.TURNSTILE_VERIFY_URL,
    "TURNSTILE_VERIFY_URL",
  );
  if (kind === "none") return { kind };
  const secret = get("CHALLENGE_SECRET") ?? (options.requireSecrets === false ? "" : undefined);
  if (secret === undefined) {
    throw new ConfigError(
      "CHALLENGE_SECRET",
      `"CHALLENGE_SECRET" is required when CHALLENGE=${kind}`,
    );
  }
  // Never echo the value: it is a secret, even when malformed.
  if (
    kind === "altcha" && secret !== "" &&
    (!ALTCHA_SECRET.test(secret) || (HEX.test(secret) && secret.length < 64))
  ) {
    throw new ConfigError(
      "CHALLENGE_SECRET",
      `"CHALLENGE_SECRET" must be 32 random bytes or more when CHALLENGE=altcha: at least 43 ` +
        `base64 characters (openssl rand -base64 32) or 64 hex characters (openssl rand -hex 32)`,
    );
  }
  if (kind === "turnstile" && secret !== "" && !TURNSTILE_SECRET.test(secret)) {
    throw new ConfigError(
      "CHALLENGE_SECRET",
      `"CHALLENGE_SECRET" must be the Turnstile secret key (16 to 256 letters, digits, ".", ` +
        `"_" or "-") when CHALLENGE=turnstile`,
    );
  }
  return kind === "altcha" ? { kind, secret } : { kind, secret, verifyUrl };
}

/** `1` or `0`, nothing else: a typo must not silently mean either. */
function parseSwitch(name: SettingName, text: string): boolean {
  if (text === "1" || text === "0") return text === "1";
  throw new ConfigError(name, `"${name}" must be 1 or 0`);
}

/**
 * A comma list of origins such as `https://example.org,https://www.example.org:8443`, each
 * normalised to what browsers send in `Origin` (lower-case host, no default port, no slash).
 */
function parseAllowedOrigins(
  text: string,
  setting: "ALLOWED_ORIGINS" | FormSettingName = "ALLOWED_ORIGINS",
): string[] {
  const origins = parseCommaList(
    setting,
    text,
    parseOrigin,
    "origins like https://example.org",
  );
  return [...new Set(origins)];
}

function parseOrigin(text: string): string | undefined {
  // Only a bare origin: a path or query would suggest a finer match than `Origin` can give.
  if (!/^https?:\/\/[^/?#@\\\s]+\/?$/i.test(text)) return undefined;
  try {
    return new URL(text).origin;
  } catch {
    return undefined;
  }
}

function parseApiUrl(
  text: string,
  setting: "MESSENGER_API_URL" | "TURNSTILE_VERIFY_URL" = "MESSENGER_API_URL",
): string {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (
    url === undefined || (url.protocol !== "https:" && url.protocol !== "http:") ||
    url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== ""
  ) {
    throw new ConfigError(
      setting,
      `"${setting}" must be an http(s) URL without credentials, query or fragment`,
    );
  }
  if (!/^(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])$/.test(url.hostname)) {
    // A "," (also written %2c) or other odd character would split or bend the --allow-net list.
    throw new ConfigError(
      setting,
      `"${setting}" must have a host of letters, digits, ".", "-" and "_", or an IP address`,
    );
  }
  return url.href.replace(/\/+$/, "");
}

/**
 * A whole number of milliseconds from `min` to `max`. `DELIVERY_WAIT_MS` is at least a second (a
 * delivery takes a round trip) and at most 30 s, well under the reverse proxy's 60 s read timeout
 * (a sender must get contactd's answer, not the proxy's 504).
 */
function parseMilliseconds(setting: SettingName, text: string, min: number, max: number): number {
  const ms = Number(text);
  if (!/^\d{1,9}$/.test(text) || ms < min || ms > max) {
    throw new ConfigError(
      setting,
      `"${setting}" must be a whole number of milliseconds between ${min} and ${max}`,
    );
  }
  return ms;
}

const UNITS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration such as `90m`, `36h` or `7d`: from one minute to 365 days. */
function parseDuration(setting: SettingName, text: string): number {
  const match = /^(\d{1,6})([mhd])$/.exec(text);
  const ms = match === null ? NaN : Number(match[1]) * UNITS[match[2]!]!;
  if (!(ms >= 60_000 && ms <= 365 * 86_400_000)) {
    throw new ConfigError(
      setting,
      `"${setting}" must be a number with m, h or d (minutes, hours, days), from 1m to 365d`,
    );
  }
  return ms;
}

/** The longest `RETENTION`: 100 years, in days. */
const MAX_RETENTION_DAYS = 36_500;

/**
 * `RETENTION`: unset keeps everything; else a number of days or hours (`90d`, `48h`), at least
 * `DELIVERY_MAX_AGE` (a message still being delivered is not removed from under its delivery).
 */
function parseRetention(text: string | undefined, deliveryMaxAgeMs: number): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d{1,6})([hd])$/.exec(text);
  const ms = match === null ? NaN : Number(match[1]) * UNITS[match[2]!]!;
  if (!(ms >= 3_600_000 && ms <= MAX_RETENTION_DAYS * 86_400_000)) {
    throw new ConfigError(
      "RETENTION",
      `"RETENTION" must be a number with h or d (hours, days: 90d), from 1h to ` +
        `${MAX_RETENTION_DAYS}d, or unset to keep every record`,
    );
  }
  if (ms < deliveryMaxAgeMs) {
    throw new ConfigError(
      "RETENTION",
      `"RETENTION" must be at least "DELIVERY_MAX_AGE" (a message is kept while it may still ` +
        "be delivered): raise it, or lower DELIVERY_MAX_AGE",
    );
  }
  return ms;
}

const RATE_UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000 };

/**
 * `RATE_LIMIT`: `<POSTs>/<window>`, the window a number with s, m or h (`5/60s`, `30/10m`,
 * `100/1h`): 1 to {@linkcode MAX_RATE_LIMIT} POSTs in 1 s to 24 h.
 */
function parseRateLimit(
  text: string,
  setting: "RATE_LIMIT" | "REPLY_LIMIT" = "RATE_LIMIT",
): RateLimit {
  const match = /^(\d{1,6})\s*\/\s*(\d{1,6})([smh])$/.exec(text);
  const limit = Number(match?.[1]);
  const windowMs = match === null ? NaN : Number(match[2]) * RATE_UNITS[match[3]!]!;
  if (!(limit >= 1 && limit <= MAX_RATE_LIMIT && windowMs >= 1000 && windowMs <= 86_400_000)) {
    const what = setting === "RATE_LIMIT" ? "POSTs" : "replies";
    throw new ConfigError(
      setting,
      `"${setting}" must be ${what}/window, the window with s, m or h (5/60s, 30/10m): 1 to ` +
        `${MAX_RATE_LIMIT} ${what} in 1s to 24h`,
    );
  }
  return { limit, windowMs };
}

/**
 * `SPAM_FILTER`: what a submission the learned spam filter scores as spam does
 * (lib/spam/spam_filter.ts): `mark` (its notification silent, marked, with Not spam and Spam),
 * `hold` (kept out of the chat, recorded and counted, like a blocked sender's), `off` (nothing
 * is scored or learnt).
 */
export type SpamFilterMode = "mark" | "hold" | "off";

/** `SPAM_FILTER`: `mark`, `hold` or `off`, in any case. */
function parseSpamFilter(text: string): SpamFilterMode {
  const mode = text.toLowerCase();
  if (mode === "mark" || mode === "hold" || mode === "off") return mode;
  throw new ConfigError("SPAM_FILTER", `"SPAM_FILTER" must be mark, hold or off`);
}

/** `CHAT_ACTIONS_BY`: `members` or `admins`, in any case. */
function parseChatActionsBy(text: string): ChatActionsBy {
  const by = text.toLowerCase();
  if (by === "members" || by === "admins") return by;
  throw new ConfigError("CHAT_ACTIONS_BY", `"CHAT_ACTIONS_BY" must be members or admins`);
}

/**
 * A plain email address (`site@example.org`): no display name, no spaces, quotes, angle brackets,
 * commas or control characters, a domain with a dot. The replies' `From` and `Reply-To`.
 */
const PLAIN_ADDRESS =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?=.{1,253}$)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$/;

/**
 * `SMTP_URL`'s server: `smtp://host[:port]` (STARTTLS, port 587 by default) or
 * `smtps://host[:port]` (TLS, 465), with `user:password@` before the host if needed. The build
 * reads it for the binary's `--allow-net` (tasks/compile.ts) without baking it in. Throws
 * {@linkcode ConfigError}, never echoing the value (it may hold the password).
 */
export function parseSmtpServer(
  text: string,
): { url: URL; secure: boolean; host: string; port: number } {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (
    url === undefined || (url.protocol !== "smtp:" && url.protocol !== "smtps:") ||
    (url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== ""
  ) {
    throw new ConfigError(
      "SMTP_URL",
      `"SMTP_URL" must be smtp://host[:port] (STARTTLS) or smtps://host[:port] (TLS), with ` +
        "user:password@ before the host if needed, and nothing after the port",
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (!/^(?:[A-Za-z0-9._-]+|[0-9A-Fa-f:.]+)$/.test(host)) {
    throw new ConfigError(
      "SMTP_URL",
      `"SMTP_URL" must have a host of letters, digits, ".", "-" and "_", or an IP address`,
    );
  }
  const secure = url.protocol === "smtps:";
  const port = url.port === "" ? (secure ? 465 : 587) : Number(url.port);
  return { url, secure, host, port };
}

/** `SMTP_URL` with `SMTP_USER`, `SMTP_PASSWORD`, `REPLY_FROM`, `REPLY_TO`; unset `SMTP_URL`: none. */
function parseMail(get: (name: SettingName) => string | undefined): MailConfig | undefined {
  const text = get("SMTP_URL");
  for (const name of ["SMTP_USER", "SMTP_PASSWORD", "REPLY_FROM", "REPLY_TO"] as const) {
    if (text === undefined && get(name) !== undefined) {
      throw new ConfigError(name, `"${name}" is set but "SMTP_URL" is not: set SMTP_URL too`);
    }
  }
  if (text === undefined) return undefined;
  const { url, secure, host, port } = parseSmtpServer(text);
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      throw new ConfigError(
        "SMTP_URL",
        `"SMTP_URL" has a user or password that is not URL-encoded`,
      );
    }
  };
  const user = get("SMTP_USER") ?? (url.username === "" ? undefined : decode(url.username));
  const password = get("SMTP_PASSWORD") ??
    (url.password === "" ? undefined : decode(url.password));
  if (password !== undefined && user === undefined) {
    throw new ConfigError("SMTP_PASSWORD", `a password for the mail server needs "SMTP_USER" too`);
  }
  const from = get("REPLY_FROM");
  if (from === undefined || !PLAIN_ADDRESS.test(from)) {
    throw new ConfigError(
      "REPLY_FROM",
      `"REPLY_FROM" must be the site's own email address (site@example.org) when SMTP_URL is set`,
    );
  }
  const replyTo = get("REPLY_TO");
  if (replyTo !== undefined && !PLAIN_ADDRESS.test(replyTo)) {
    throw new ConfigError("REPLY_TO", `"REPLY_TO" must be one plain email address`);
  }
  return {
    secure,
    host,
    port,
    ...(user === undefined ? {} : { user }),
    ...(password === undefined ? {} : { password }),
    from,
    ...(replyTo === undefined ? {} : { replyTo }),
  };
}

function parseTrustedProxies(text: string): Cidr[] {
  // "none": a service exposed without a proxy believes no forwarded header at all.
  if (text.toLowerCase() === "none") return [];
  return parseCommaList(
    "TRUSTED_PROXIES",
    text,
    (item) => parseCidr(item) ?? undefined,
    "IP addresses or CIDRs",
  );
}

/** `X-Forwarded-For` or `X-Real-IP`, in any case. */
function parseRealIpHeader(text: string): RealIpHeader {
  const header = REAL_IP_HEADERS.find((name) => name === text.toLowerCase());
  if (header !== undefined) return header;
  throw new ConfigError("REAL_IP_HEADER", `"REAL_IP_HEADER" must be X-Forwarded-For or X-Real-IP`);
}

/** Parses each non-blank item of a comma list; the first one `parse` refuses stops start-up. */
function parseCommaList<T>(
  setting: SettingName | FormSettingName,
  text: string,
  parse: (item: string) => T | undefined,
  expected: string,
): T[] {
  const result: T[] = [];
  for (const [index, item] of text.split(",").entries()) {
    const trimmed = item.trim();
    if (trimmed === "") continue;
    const value = parse(trimmed);
    if (value === undefined) {
      // The item is named by position, never echoed: a value that swallowed the next line of an
      // env file (a lost newline) may hold the bot token.
      throw new ConfigError(
        setting,
        `"${setting}" must be a comma list of ${expected}; item ${index + 1} is not one`,
      );
    }
    result.push(value);
  }
  return result;
}
