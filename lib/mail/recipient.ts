/**
 * Who a reply may go to: only a contact that is a plain email address (an RFC 5321 mailbox with
 * a dot-atom local part and a domain name with a dot), never anything a mail library would parse
 * into more than one recipient or into a header; and how that address is shown (masked) in the
 * chat.
 *
 * @module
 */

/** The longest local part RFC 5321 allows (octets; the address is ASCII). */
export const MAX_LOCAL_PART = 64;
/** The longest domain RFC 5321 allows. */
export const MAX_DOMAIN = 255;
/** The longest address: a 256-octet path less its angle brackets. */
export const MAX_ADDRESS = 254;

// RFC 5322 atext less `%` and `!`, which old relays still read as source routes.
const _LOCAL_PART = /^[A-Za-z0-9#$&'*+\-/=?^_`{|}~]+(\.[A-Za-z0-9#$&'*+\-/=?^_`{|}~]+)*$/;
const _LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * The address to email for a submission's `contact`, or `undefined` when it is anything but one
 * plain ASCII address `local@domain.tld`: no display name, quotes, angle brackets, comments,
 * commas, spaces or control characters (so no CR/LF), no IP literal or dotless domain, an
 * all-numeric top-level label refused, within RFC 5321's lengths. Surrounding spaces (only
 * spaces: a CR or LF anywhere refuses it) are trimmed; the address is otherwise used as written.
 */
export function emailRecipient(contact: string): string | undefined {
  const address = contact.replace(/^ +| +$/g, "");
  if (address.length === 0 || address.length > MAX_ADDRESS) return undefined;
  const at = address.lastIndexOf("@");
  if (at <= 0 || address.indexOf("@") !== at) return undefined;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local.length > MAX_LOCAL_PART || !_LOCAL_PART.test(local)) return undefined;
  if (domain.length > MAX_DOMAIN) return undefined;
  const labels = domain.split(".");
  if (labels.length < 2 || !labels.every((label) => _LABEL.test(label))) return undefined;
  if (/^\d+$/.test(labels[labels.length - 1]!)) return undefined;
  return address;
}

/**
 * An address as the chat shows it: the local part's first character, `•••`, and the domain
 * (`carla@example.org` → `c•••@example.org`). Not an address (no `@`): `•••`.
 */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf("@");
  if (at <= 0) return "•••";
  return `${address.slice(0, 1)}•••${address.slice(at)}`;
}
