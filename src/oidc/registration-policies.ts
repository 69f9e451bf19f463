/**
 * Registration-token policies: what a dynamic registration (`register-rp`) made with a token may
 * set. `general-policy` is the baseline and always applies, whichever policies a token lists;
 * `allow-*` policies lift one of its restrictions, `native-only` adds one. So a token listing only
 * `allow-client-credentials` is general-policy plus the client_credentials grant.
 */
import type { FieldError } from '../http/problem.js';
import type { ClientMetadata } from '../storage/types.js';
import { isManagementScope } from './scopes.js';

export const REGISTRATION_POLICIES = ['general-policy', 'allow-client-credentials', 'allow-management-scopes', 'native-only'] as const;
export type RegistrationPolicy = (typeof REGISTRATION_POLICIES)[number];
export const DEFAULT_POLICIES: RegistrationPolicy[] = ['general-policy'];

/** The only non-management scopes a registered client may hold. */
export const STANDARD_OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;

const KNOWN = new Set<string>(REGISTRATION_POLICIES);
const STANDARD = new Set<string>(STANDARD_OIDC_SCOPES);

export function isRegistrationPolicy(name: string): name is RegistrationPolicy {
  return KNOWN.has(name);
}

/**
 * Field errors for every restriction the built metadata breaks; empty when it is allowed.
 * `creatorScopes` are the `svc:*` scopes the token's creator held (null: none): a registered client
 * is never allowed more (issue 12, hole 3; clients/escalation.ts).
 */
export function policyViolations(m: ClientMetadata, policies: readonly string[], creatorScopes: readonly string[] | null): FieldError[] {
  const creator = new Set(creatorScopes ?? []);
  const has = new Set(policies);
  const errors: FieldError[] = [];
  if (m.first_party) errors.push({ field: 'first_party', message: 'dynamically registered clients cannot be first-party' });
  if (m.grant_types.includes('client_credentials') && !has.has('allow-client-credentials')) {
    errors.push({ field: 'grant_types', message: "the client_credentials grant needs a registration token with the 'allow-client-credentials' policy" });
  }
  for (const scope of (m.scope ?? '').split(' ').filter(Boolean)) {
    if (STANDARD.has(scope)) continue;
    if (isManagementScope(scope)) {
      if (!has.has('allow-management-scopes')) {
        errors.push({ field: 'scope', message: `scope ${scope} needs a registration token with the 'allow-management-scopes' policy` });
      } else if (!creator.has(scope)) {
        errors.push({ field: 'scope', message: `scope ${scope} is beyond what the registration token's creator holds` });
      }
      continue;
    }
    errors.push({ field: 'scope', message: `scope ${scope} is not allowed; use ${STANDARD_OIDC_SCOPES.join(', ')}${has.has('allow-management-scopes') ? ' or svc:* management scopes' : ''}` });
  }
  if (has.has('native-only') && m.application_type !== 'native') {
    errors.push({ field: 'application_type', message: "the registration token's 'native-only' policy requires application_type native" });
  }
  return errors;
}
