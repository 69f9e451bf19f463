/**
 * Token lifetimes against the overlap window (spec 1.6). A key rotated out, or demoted because its
 * algorithm was removed, verifies for `security.key_store.overlap_window_seconds` and is then
 * retired: a token it signed just before that moment stops verifying early when it lives longer
 * than the window. Concerned are the tokens verified with these keys: access tokens as JWT
 * (`oidc.ttl.access_token`: the Management API's, and a resource's default) and ID tokens
 * (`oidc.ttl.id_token`). Refresh tokens and opaque access tokens are looked up in storage, never
 * verified with a key, so their lifetimes do not matter here.
 *
 * A warning, not a refusal: a short window is a legitimate choice (a key taken out quickly) as
 * long as the operator knows what it costs.
 */
import type { Config } from '../config/index.js';

export const SIGNED_LIFETIMES = ['access_token', 'id_token'] as const;
export type SignedLifetime = (typeof SIGNED_LIFETIMES)[number];

export interface LifetimeOverrun {
  name: SignedLifetime;
  /** The lifetime (seconds). */
  seconds: number;
  /** The overlap window (seconds). */
  overlap: number;
}

/**
 * The signed-token lifetimes of `config` longer than its overlap window; `only`: just the lifetimes
 * it names (a tenant's overrides), each checked at its value in `config`.
 */
export function lifetimesBeyondOverlap(config: Pick<Config, 'oidc' | 'security'>, only?: Partial<Record<SignedLifetime, unknown>>): LifetimeOverrun[] {
  const overlap = config.security.key_store.overlap_window_seconds;
  return SIGNED_LIFETIMES.filter((name) => !only || only[name] !== undefined)
    .map((name) => ({ name, seconds: config.oidc.ttl[name], overlap }))
    .filter((o) => o.seconds > o.overlap);
}

/** The environment variable of a global lifetime (`OIDC_TTL_ACCESS_TOKEN`). */
export const lifetimeEnv = (name: SignedLifetime): string => `OIDC_TTL_${name.toUpperCase()}`;

/** What the warning says, `setting` naming the lifetime as the reader set it. */
export function overrunMessage(setting: string, o: LifetimeOverrun): string {
  return (
    `${setting} (${o.seconds} s) is longer than SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS (${o.overlap} s): ` +
    `a token signed just before a key rotation stops verifying up to ${o.seconds - o.overlap} s before it expires; ` +
    `set the overlap window to at least ${o.seconds} s or shorten the lifetime`
  );
}
