/** oidc-provider accounts backed by the users repository; `sub` is the user's id (CONTRACT.md). */
import type { Account, FindAccount } from 'oidc-provider';
import { claimSourceFields } from '../resources/custom-claims.js';
import type { Storage, TenantId, UserWithoutSecrets } from '../storage/types.js';

/** Whether a user may hold a session and tokens at all. */
export function canSignIn(user: UserWithoutSecrets | undefined, now = Date.now()): boolean {
  if (!user || user.deleted_at || !user.account_enabled) return false;
  if (user.locked && !(user.locked_until && Date.parse(user.locked_until) <= now)) return false;
  return true;
}

/** The standard claims of a user, absent ones left out (built directly: it runs on every userinfo request). */
export function userClaims(u: UserWithoutSecrets): Record<string, unknown> {
  const claims: Record<string, unknown> = { sub: u.id };
  if (u.name != null) claims.name = u.name;
  if (u.given_name != null) claims.given_name = u.given_name;
  if (u.family_name != null) claims.family_name = u.family_name;
  if (u.nickname != null) claims.nickname = u.nickname;
  if (u.username != null) claims.preferred_username = u.username;
  claims.updated_at = Math.floor(Date.parse(u.updated_at) / 1000);
  if (u.email != null) claims.email = u.email;
  if (u.email && u.email_verified !== undefined) claims.email_verified = u.email_verified;
  return claims;
}

/** The claims an account offers for `scope` (oidc-provider then keeps those the scope releases). */
export function accountClaims(user: UserWithoutSecrets, scope: string | undefined): { sub: string; roles?: string[] } & Record<string, unknown> {
  const claims = userClaims(user) as { sub: string; roles?: string[] };
  if ((scope ?? '').split(' ').includes('roles')) claims.roles = [user.role];
  return claims;
}

export function findAccountFor(storage: Storage, tenant: TenantId): FindAccount {
  return async (_ctx, sub): Promise<Account | undefined> => {
    const user = await storage.users.get(tenant, sub);
    // Locked, disabled and anonymised users lose their sessions' tokens too (refresh, userinfo).
    if (!user || !canSignIn(user)) return undefined;
    return {
      accountId: user.id,
      // Read by the roles claim of access tokens (resources/roles-claim.ts) and by the
      // resource-server policy (provider.ts): a Management token carries what the role grants.
      role: user.role,
      // Read by the tenant's custom claims (resources/claims-provider.ts).
      fields: claimSourceFields(user),
      // oidc-provider filters these by the granted scopes (claims configuration in provider.ts);
      // `roles` only with the roles scope, since it is listed under openid for the ID token.
      claims: async (_use: string, scope: string) => accountClaims(user, scope),
    };
  };
}
