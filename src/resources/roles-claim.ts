/**
 * The `roles` claim of access tokens (issue 19): the user's role, as an array so permissions or
 * several roles can join it later without a change of type. Present when the grant holds the
 * `roles` scope, or when the token's resource asks for it (include_roles).
 */
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { ResourceIndex } from './index-cache.js';

interface TokenLike {
  accountId?: string;
  resourceServer?: { audience?: string };
  scope?: string;
}

/** What the account object carries besides oidc-provider's fields (accounts.ts). */
export interface AccountWithRole {
  accountId: string;
  role?: string;
}

export function rolesClaimFor(ctx: KoaContextWithOIDC, token: unknown, resources: ResourceIndex | undefined): string[] | undefined {
  const t = token as TokenLike;
  if (!t.accountId) return undefined; // client_credentials: no user, no role
  const account = ctx.oidc.account as AccountWithRole | undefined;
  if (!account?.role || account.accountId !== t.accountId) return undefined;
  const grantScope = ctx.oidc.entities.Grant?.getOIDCScope() ?? '';
  const granted = grantScope.split(' ').includes('roles') || (t.scope ?? '').split(' ').includes('roles');
  const audience = t.resourceServer?.audience;
  const wanted = granted || (audience !== undefined && resources?.get(audience)?.include_roles === true);
  return wanted ? [account.role] : undefined;
}
