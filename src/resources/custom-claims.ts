/**
 * Custom claims (issue 19 item 3): tenant-defined claims added to ID tokens, userinfo and user
 * access tokens, each either copied from a user field or a fixed value (`tenant: "acme"`). Stored
 * as the tenant's `custom_claims` document in the tenant configuration table (not one of the
 * spec's override sections, so the config API neither shows nor accepts it).
 */
import { z } from 'zod';
import type { TenantConfigRepository, TenantId, UserRecord } from '../storage/types.js';

export const CUSTOM_CLAIMS_DOCUMENT = 'custom_claims';
export const MAX_CUSTOM_CLAIMS = 20;

/** User fields a claim may copy (never secrets, hashes or lock state). */
export const CLAIM_SOURCES = ['id', 'email', 'email_verified', 'username', 'given_name', 'family_name', 'name', 'nickname', 'role', 'auth_provider', 'created_at'] as const;
export type ClaimSource = (typeof CLAIM_SOURCES)[number];

/**
 * Claims a tenant may not define: the protocol's own (RFC 7519, OIDC Core 2 and 3, RFC 9068,
 * RFC 7662, back-channel logout), the standard claims this provider fills by scope, and ours.
 */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  'iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'auth_time', 'nonce', 'acr', 'amr', 'azp', 'at_hash', 'c_hash', 's_hash',
  'sid', 'scope', 'client_id', 'cnf', 'events', 'typ', 'token_type', 'active', 'username', 'act', 'may_act',
  'name', 'given_name', 'family_name', 'middle_name', 'nickname', 'preferred_username', 'profile', 'picture', 'website',
  'email', 'email_verified', 'gender', 'birthdate', 'zoneinfo', 'locale', 'phone_number', 'phone_number_verified', 'address', 'updated_at',
  'roles', 'sgen', 'grant_id', 'authorization_details', '_claim_names', '_claim_sources',
]);

/** A JSON member name that is safe in every token format and log: letters, digits and a few separators. */
const CLAIM_NAME = /^[A-Za-z_][A-Za-z0-9_.:/-]{0,99}$/;

/**
 * Names of Object.prototype's members (`constructor`, `toString`, `hasOwnProperty`, ...): a claim
 * of that name becomes an own member of the claims objects built for tokens, and `constructor`
 * made oidc-provider refuse the extra claims as not a plain object, a 500 on every resource token
 * of the tenant (fifth session's audit). Reserved like `__proto__`.
 */
const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));
const unsafeName = (name: string) => RESERVED_CLAIMS.has(name) || name.startsWith('__proto__') || PROTOTYPE_NAMES.has(name);

const claimDefinition = z
  .strictObject({
    name: z.string().superRefine((name, ctx) => {
      if (!CLAIM_NAME.test(name)) ctx.addIssue({ code: 'custom', message: 'must start with a letter or _ and use letters, digits, _ . : / - (at most 100)' });
      else if (unsafeName(name)) ctx.addIssue({ code: 'custom', message: `'${name}' is a reserved claim` });
    }),
    from: z.enum(CLAIM_SOURCES).optional(),
    value: z.union([z.string().max(500, 'must be at most 500 characters'), z.number().finite(), z.boolean()]).optional(),
  })
  .superRefine((d, ctx) => {
    if ((d.from === undefined) === (d.value === undefined)) ctx.addIssue({ code: 'custom', path: ['from'], message: 'give exactly one of from (a user field) or value (a fixed value)' });
  });

export const customClaimsSchema = z.strictObject({
  claims: z
    .array(claimDefinition)
    .max(MAX_CUSTOM_CLAIMS, `must have at most ${MAX_CUSTOM_CLAIMS} items`)
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((d, i) => {
        if (seen.has(d.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate claim '${d.name}'` });
        seen.add(d.name);
      });
    }),
});
export type CustomClaims = z.output<typeof customClaimsSchema>;
export type CustomClaim = CustomClaims['claims'][number];

export async function loadCustomClaims(repo: TenantConfigRepository, tenant: TenantId): Promise<CustomClaim[]> {
  const stored = (await repo.get(tenant))[CUSTOM_CLAIMS_DOCUMENT];
  // Written only through customClaimsSchema; parsed again so a hand-edited row cannot inject anything.
  const parsed = customClaimsSchema.safeParse(stored ?? { claims: [] });
  if (parsed.success) return parsed.data.claims;
  // A definition stored before its name was reserved (a prototype member's) is left out, not the
  // tenant's other claims with it.
  const list = (stored as { claims?: unknown } | undefined)?.claims;
  const kept = Array.isArray(list) ? list.filter((d: unknown) => !(typeof (d as { name?: unknown })?.name === 'string' && PROTOTYPE_NAMES.has((d as { name: string }).name))) : [];
  const again = customClaimsSchema.safeParse({ claims: kept });
  return again.success ? again.data.claims : [];
}

/** The user fields a claim may copy, without anything else of the record. */
export type ClaimSourceFields = Pick<UserRecord, ClaimSource>;

export function claimSourceFields(user: ClaimSourceFields): ClaimSourceFields {
  return Object.fromEntries(CLAIM_SOURCES.map((k) => [k, user[k]])) as ClaimSourceFields;
}

/** The claims' values for one user; a field the user does not have (null) gives no claim. */
export function customClaimValues(defs: readonly CustomClaim[], user: ClaimSourceFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const d of defs) {
    const value = d.from !== undefined ? user[d.from] : d.value;
    if (value !== null && value !== undefined) out[d.name] = value;
  }
  return out;
}
