/** Custom claims (custom-claims.ts) in oidc-provider: through the account's claims and the access-token hook. */
import type { Account, FindAccount, KoaContextWithOIDC } from 'oidc-provider';
import { customClaimValues, type ClaimSourceFields, type CustomClaim } from './custom-claims.js';

/** What accounts.ts puts on an account besides oidc-provider's fields. */
interface AccountFields {
  accountId: string;
  fields?: ClaimSourceFields;
}

/** findAccount whose accounts also return the tenant's custom claims (for the ID token and userinfo). */
export function withCustomClaims(find: FindAccount, defs: readonly CustomClaim[]): FindAccount {
  if (!defs.length) return find;
  return async (ctx, sub, token) => {
    const account = await find(ctx, sub, token);
    const fields = (account as AccountFields | undefined)?.fields;
    if (!account || !fields) return account;
    const claims = account.claims.bind(account);
    const wrapped: Account = Object.assign(Object.create(Object.getPrototypeOf(account) as object) as Account, account, {
      // The custom values first: a reserved or standard claim can never be replaced (they are refused anyway).
      claims: async (...args: Parameters<Account['claims']>) => ({ ...customClaimValues(defs, fields), ...(await claims(...args)) }),
    });
    return wrapped;
  };
}

/** Custom claims for a user access token being issued, from the account the grant loaded. */
export function customAccessTokenClaims(ctx: KoaContextWithOIDC, token: unknown, defs: readonly CustomClaim[]): Record<string, unknown> {
  const accountId = (token as { accountId?: string }).accountId;
  if (!defs.length || !accountId) return {};
  const account = ctx.oidc.account as AccountFields | undefined;
  if (!account?.fields || account.accountId !== accountId) return {};
  return customClaimValues(defs, account.fields);
}
