/**
 * One sign-up per form, whatever the number of posts. A double-click on "Create account" sends the
 * form twice at once: the first post creates the account, the copy found the address taken and
 * answered as for anyone else's address: it overwrote the interaction's state with a "check your
 * e-mail" of its own (the browser shows the copy's answer, so the sign-in was lost) and mailed the
 * user who had just signed up that someone had tried their address.
 *
 * So the post is claimed first, per interaction and address, in the replay store (an in-process
 * memo, and with Redis one `SET NX` shared by every instance; replay-store.ts). The copy that loses
 * the claim changes nothing and sends nothing: it waits until the first post has settled the
 * interaction and leads where that one led, to the authorization request's resume (the relying
 * party's code) or to the interaction page (check your e-mail, the second step).
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type Provider from 'oidc-provider';

/** The claims' namespace in the replay store. */
export const SIGNUP_CLAIM_ISSUER = 'signup-post';
/**
 * How long a claim holds. Copies of one click come within a second; a post of the same address
 * later than this (the form again after a refusal) is a post of its own.
 */
export const SIGNUP_CLAIM_SECONDS = 15;
/** How long a copy waits for the first post (its Argon2 hash and writes) before going to the page. */
const WAIT_MS = 10_000;
const POLL_MS = 100;

/** The claim's id: the address hashed, never kept as it is in the store's keys. */
export function signupClaimId(uid: string, email: string): string {
  return createHash('sha256').update(`${uid}\n${email.toLowerCase()}`).digest('base64url');
}

/**
 * Where the copy of a sign-up post leads once the first post has settled the interaction: its
 * resume URL when the first signed the user in, else `page` (the interaction page shows the state
 * the first left). `settled` tells from the interaction's result whether the first is done.
 */
export async function whereFirstPostLed(provider: Provider, uid: string, page: string, settled: (result: Record<string, unknown>) => boolean): Promise<string> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const interaction = await provider.Interaction.find(uid);
    if (!interaction) return page;
    const result = (interaction.result ?? {}) as Record<string, unknown>;
    if (result.login) return interaction.returnTo;
    if (settled(result) || Date.now() >= deadline) return page;
    await sleep(POLL_MS);
  }
}
