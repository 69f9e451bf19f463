/**
 * The tenant's built-in first-party clients: the account page (`/account`) and the administration
 * console (`/admin`) sign users in through the tenant's own authorization endpoint like any relying
 * party, as public clients with code + PKCE. They are synthesized per tenant from its public origin,
 * never stored, never listed by the Management API, and cannot be changed through it; their ids
 * cannot collide with stored clients (those are generated, never chosen).
 *
 * What a token of `svc-admin` may do is decided by the user's role when the token is issued and
 * used (the authorization model), not by this list: the list only says what the client may ask for.
 */
import type { ClientRecord } from '../storage/types.js';

export const ACCOUNT_CLIENT_ID = 'svc-account';
export const ADMIN_CLIENT_ID = 'svc-admin';

const EPOCH = '1970-01-01T00:00:00.000Z';

interface SystemClientSpec {
  name: string;
  /** Path on the tenant's origin that receives the authorization response. */
  callbackPath: string;
  /** Paths on the tenant's origin a sign-out may return to. */
  postLogoutPaths: string[];
  /** The scopes it may ask for; `management` stands for every Management API scope of the caller's list. */
  scope: string;
}

const SPECS: Record<string, SystemClientSpec> = {
  [ACCOUNT_CLIENT_ID]: {
    name: 'Account',
    callbackPath: '/account/callback',
    postLogoutPaths: ['/account'],
    scope: 'openid profile email',
  },
  [ADMIN_CLIENT_ID]: {
    name: 'Administration console',
    callbackPath: '/admin/callback',
    postLogoutPaths: ['/admin/', '/admin', '/admin/signed-out'],
    scope: 'openid profile email offline_access management',
  },
};

export function isSystemClientId(clientId: string): boolean {
  return Object.hasOwn(SPECS, clientId);
}

/**
 * The built-in client `clientId` of the tenant served at `origin` (e.g. `http://acme.localhost:3000`),
 * or undefined. `managementScopes` is the Management API's scope list (the OIDC surface owns it).
 */
export function systemClient(clientId: string, origin: string, managementScopes: readonly string[]): ClientRecord | undefined {
  if (!isSystemClientId(clientId)) return undefined;
  const spec = SPECS[clientId];
  if (!spec) return undefined;
  const scope = spec.scope
    .split(' ')
    .flatMap((s) => (s === 'management' ? managementScopes : [s]))
    .join(' ');
  return {
    client_id: clientId,
    secret_hash: null,
    secret_sealed: null,
    secret_generation: 0,
    active: true,
    created_at: EPOCH,
    updated_at: EPOCH,
    last_used_at: null,
    tokens_issued: 0,
    metadata: {
      client_name: spec.name,
      application_type: 'web',
      redirect_uris: [origin + spec.callbackPath],
      post_logout_redirect_uris: spec.postLogoutPaths.map((p) => origin + p),
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope,
      token_endpoint_auth_method: 'none',
      contacts: [],
      tags: ['system'],
      require_pkce: true,
      first_party: true,
    },
  };
}
