/**
 * Translation of a stored client (Management API shape, spec 2.2) into oidc-provider client
 * metadata. The secret helpers are the clients domain's (src/clients/secrets.ts).
 */
import { randomBytes } from 'node:crypto';
import type { AdapterPayload } from 'oidc-provider';
import { hashSecret } from '../clients/secrets.js';
import type { Sealer } from '../keys/sealer.js';
import type { ClientRecord, TenantId } from '../storage/types.js';

/** Matches no presented secret (and, as an HMAC key, signs nothing a client could make). */
const NO_SECRET = hashSecret(randomBytes(32).toString('base64url'));

export function toProviderMetadata(record: ClientRecord, sealer: Sealer, tenant: TenantId): AdapterPayload {
  const m = record.metadata;
  const grantTypes = [...m.grant_types];
  let responseTypes = [...m.response_types];
  // oidc-provider refuses code clients without redirect URIs: such a client can only do the other grants.
  if (!m.redirect_uris.length) {
    responseTypes = [];
    const i = grantTypes.indexOf('authorization_code');
    if (i >= 0) grantTypes.splice(i, 1);
    if (grantTypes.length === 1 && grantTypes[0] === 'refresh_token') grantTypes.length = 0;
  }
  const out: AdapterPayload = {
    client_id: record.client_id,
    client_name: m.client_name,
    application_type: m.application_type === 'native' ? 'native' : 'web',
    redirect_uris: m.redirect_uris,
    post_logout_redirect_uris: m.post_logout_redirect_uris,
    grant_types: grantTypes,
    response_types: responseTypes as AdapterPayload['response_types'],
    token_endpoint_auth_method: m.token_endpoint_auth_method,
    contacts: m.contacts,
    require_pkce: m.require_pkce,
    first_party: m.first_party,
    secret_generation: record.secret_generation,
  };
  for (const key of ['scope', 'client_uri', 'logo_uri', 'policy_uri', 'tos_uri', 'id_token_signed_response_alg', 'subject_type', 'default_max_age', 'backchannel_logout_uri', 'jwks_uri', 'jwks'] as const) {
    if (m[key] !== undefined) (out as Record<string, unknown>)[key] = m[key];
  }
  if (m.backchannel_logout_uri) out.backchannel_logout_session_required = true;
  if (m.token_endpoint_auth_method === 'client_secret_jwt' && record.secret_sealed) {
    out.client_secret = sealer.unseal(record.secret_sealed, `${tenant}:client:${record.client_id}`);
  } else if (record.secret_hash) {
    out.client_secret = record.secret_hash;
  }
  if (m.application_type === 'spa' || m.token_endpoint_auth_method === 'none') {
    delete out.client_secret;
  } else if (out.client_secret === undefined && m.token_endpoint_auth_method !== 'private_key_jwt') {
    // Made confidential without a secret yet (PATCH from `none`; the secret comes from POST /secret):
    // oidc-provider would refuse to load the client at all (400 invalid_client_metadata on every
    // request naming it). A hash of nothing anyone knows: authentication fails as for a wrong secret.
    out.client_secret = NO_SECRET;
  }
  return out;
}
