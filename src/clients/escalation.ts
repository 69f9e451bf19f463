/**
 * Nobody grants what they do not hold (issue 12, hole 3). A client allowed a `svc:*` scope can
 * mint Management tokens with it, so whoever configures such a client must hold that scope
 * themselves; the same for a registration token, which lets strangers create clients later.
 *
 * - A client write (create, PUT, PATCH, secret regeneration: anything that hands the caller a client
 *   they can authenticate as, or changes how it authenticates) needs every `svc:*` scope the
 *   resulting client is allowed.
 * - A registration token's policies that open Management powers to registrants need the scope that
 *   the Management API itself would need for the same client (`svc:clients:write`), and the
 *   creator's own `svc:*` scopes are recorded with the token: a client registered with it may be
 *   allowed only those (checked at register-rp, oidc/registration-policies.ts).
 *
 * "Held" is what the caller's token holds now: a client token's scope claim, a user token's after
 * narrowing to the user's current role (users/roles.ts). The Management API, register-rp and the
 * console (which calls the API) all go through here; the CLI and the bootstrap client are the
 * operator, who holds everything.
 */
import { BeyondOwnScopes } from '../errors.js';
import { isManagementScope } from '../resources/management-api.js';

/** Registration policies that need a scope of their creator (a registrant gets a client through them). */
const POLICY_NEEDS: Readonly<Record<string, readonly string[]>> = {
  'allow-client-credentials': ['svc:clients:write'],
  'allow-management-scopes': ['svc:clients:write'],
};

/** The caller's `svc:*` scopes, from a space-separated scope claim. */
export function heldScopes(scopeClaim: string | undefined): Set<string> {
  return new Set((scopeClaim ?? '').split(' ').filter(isManagementScope));
}

/** The `svc:*` scopes of a client's allowed `scope` that `held` lacks, in the client's order. */
export function scopesBeyond(clientScope: string | undefined, held: ReadonlySet<string>): string[] {
  return [...new Set((clientScope ?? '').split(' ').filter((s) => isManagementScope(s) && !held.has(s)))];
}

function beyond(missing: string[], what: string): BeyondOwnScopes {
  return new BeyondOwnScopes(missing, `${what} beyond the caller's own scopes; the caller lacks: ${missing.join(' ')}`);
}

/** 403 `insufficient-scope` naming them when the client would be allowed scopes the caller lacks. */
export function assertMayConfigureClient(clientScope: string | undefined, held: ReadonlySet<string>): void {
  const missing = scopesBeyond(clientScope, held);
  if (missing.length) throw beyond(missing, 'The client would be allowed scopes');
}

/** 403 `insufficient-scope` naming the policies and the scopes they need when the caller lacks them. */
export function assertMayIssueRegistrationPolicies(policies: readonly string[], held: ReadonlySet<string>): void {
  const offending = policies.filter((p) => (POLICY_NEEDS[p] ?? []).some((s) => !held.has(s)));
  if (!offending.length) return;
  const missing = [...new Set(offending.flatMap((p) => (POLICY_NEEDS[p] ?? []).filter((s) => !held.has(s))))];
  throw beyond(missing, `The registration policies ${offending.join(', ')} would grant`);
}
