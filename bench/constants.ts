/** Names both servers agree on, so the scenarios ask the same thing of each. */

/** The Management API resource indicator (the product's MANAGEMENT_RESOURCE). */
export const RESOURCE = 'urn:svc:api:v1';
/** The one scope every benchmarked token carries. */
export const SCOPE = 'svc:clients:read';
/** Both servers mount OpenID Connect here. */
export const OIDC_PATH = '/oidc/v1';

export const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

export function isSigningAlg(value: unknown): value is SigningAlg {
  return typeof value === 'string' && (SIGNING_ALGS as readonly string[]).includes(value);
}
