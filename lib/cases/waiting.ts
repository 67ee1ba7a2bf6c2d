/**
 * How many messages a sender may write on a case page before the owner answers: the sender's
 * first message and the follow-ups after the owner's last reply count, and at
 * {@linkcode MAX_UNANSWERED} the page takes no more until a reply comes. A follow-up needs no
 * challenge (the page runs no script), so without this cap one token would let a sender with
 * many addresses post without end into the chat and grow one page without bound.
 *
 * @module
 */

/** The sender's messages in a row, the first one included, that a case takes unanswered. */
export const MAX_UNANSWERED = 10;

/** How many of `posts` (in order) the sender wrote after the owner's last reply. */
export function unanswered(posts: readonly { readonly author: "sender" | "owner" }[]): number {
  let count = 0;
  for (let i = posts.length - 1; i >= 0 && posts[i]!.author === "sender"; i--) count++;
  return count;
}

/** Whether a case whose posts are `posts` waits for the owner's reply before taking more. */
export function waitsForReply(posts: readonly { readonly author: "sender" | "owner" }[]): boolean {
  return unanswered(posts) >= MAX_UNANSWERED;
}
