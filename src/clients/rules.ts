/**
 * Builds stored client metadata from a validated request (create, PUT, PATCH) and enforces the
 * rules that span fields: public SPA/native clients, redirect URI shapes per application type
 * (spec 1.1 rule 2), grant/response type consistency.
 */
import type { Config } from '../config/index.js';
import { Invalid, type FieldError } from '../errors.js';
import { outboundPolicy, urlProblem } from '../outbound/index.js';
import { canVerifySignatures, jwksProblems } from './jwks-rules.js';
import type { ClientMetadata } from '../storage/types.js';
import { MUTABLE_CLIENT_FIELDS, type ClientInput } from './schema.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A loopback http URI without its port, or undefined for any other URI. */
function loopbackWithoutPort(uri: string): string | undefined {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return undefined;
  }
  return u.protocol === 'http:' && LOOPBACK.has(u.hostname) ? `http://${u.hostname}${u.pathname}${u.search}` : undefined;
}

/**
 * Whether `uri` is one of the client's redirect URIs as the authorization endpoint matches them
 * (oidc-provider's redirectUriAllowed): exactly, or for a native client a loopback http URI on any
 * port (RFC 8252 7.3: the app picks its port when it runs).
 */
export function redirectUriRegistered(m: Pick<ClientMetadata, 'application_type' | 'redirect_uris'>, uri: string): boolean {
  if (m.redirect_uris.includes(uri)) return true;
  if (m.application_type !== 'native') return false;
  const bare = loopbackWithoutPort(uri);
  return bare !== undefined && m.redirect_uris.some((registered) => loopbackWithoutPort(registered) === bare);
}

export function defaultsFor(type: ClientMetadata['application_type']): Pick<ClientMetadata, 'token_endpoint_auth_method'> {
  return { token_endpoint_auth_method: type === 'web' ? 'client_secret_basic' : 'none' };
}

/**
 * A redirect URI that no authorization request could name as registered: a `%` not followed by two
 * hex digits (RFC 3986 2.1; a client library encodes or refuses it, so the exact-string comparison
 * never matches), or the same URI twice in one list.
 */
function listProblem(list: readonly string[], uri: string, i: number): string | undefined {
  if (/%(?![0-9A-Fa-f]{2})/.test(uri)) return 'has a malformed percent-escape (% must be followed by two hex digits)';
  if (list.indexOf(uri) !== i) return `is listed twice (also at ${list.indexOf(uri)})`;
  return undefined;
}

function checkRedirect(uri: string, type: ClientMetadata['application_type'], development: boolean): string | undefined {
  // Redirect URIs are compared as exact strings: a wildcard would only ever match itself, and a
  // non-ASCII host would not match the punycode form a relying party's library sends.
  if (uri.includes('*')) return 'wildcards are not supported: register each redirect URI exactly';
  const u = new URL(uri);
  if (/[^\x21-\x7e]/.test(uri)) return `must be an ASCII URI (for an internationalised host, its punycode form: ${u.href.slice(0, 200)})`;
  const loopback = u.protocol === 'http:' && LOOPBACK.has(u.hostname);
  if (type === 'native') {
    if (u.protocol === 'https:' || loopback) return undefined;
    if (u.protocol === 'http:') return 'native clients may only use http with a loopback host';
    const scheme = u.protocol.slice(0, -1);
    return scheme.includes('.') ? undefined : 'custom schemes must be reverse-domain names (e.g. com.example.app:/callback)';
  }
  if (u.protocol === 'https:') return undefined;
  if (loopback && development) return undefined;
  if (loopback) return 'http://localhost redirect URIs are only allowed with NODE_ENV=development';
  return `${type} clients must use https redirect URIs`;
}

/**
 * `base` is the stored metadata for PATCH, undefined for create and PUT (omitted fields are cleared
 * to their defaults).
 */
export function buildMetadata(input: ClientInput, base: ClientMetadata | undefined, config: Config): ClientMetadata {
  const supplied: Partial<ClientMetadata> = {};
  const cleared: string[] = [];
  for (const key of MUTABLE_CLIENT_FIELDS) {
    if (input[key] === null) cleared.push(key); // NULLABLE_CLIENT_FIELDS: unset, or back to the default
    else if (input[key] !== undefined) (supplied as Record<string, unknown>)[key] = input[key];
  }
  const type = supplied.application_type ?? base?.application_type ?? 'web';
  const grantTypes = supplied.grant_types ?? base?.grant_types ?? ['authorization_code'];
  const m: ClientMetadata = {
    client_name: '',
    application_type: type,
    redirect_uris: [],
    post_logout_redirect_uris: [],
    grant_types: grantTypes,
    response_types: grantTypes.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: defaultsFor(type).token_endpoint_auth_method,
    contacts: [],
    tags: [],
    require_pkce: true,
    first_party: false,
    ...(base ?? {}),
    ...supplied,
  };
  for (const key of cleared) delete (m as unknown as Record<string, unknown>)[key];
  if (base && supplied.grant_types && !supplied.response_types) m.response_types = grantTypes.includes('authorization_code') ? ['code'] : [];
  if (base && supplied.application_type && !supplied.token_endpoint_auth_method && base.application_type !== type) {
    m.token_endpoint_auth_method = defaultsFor(type).token_endpoint_auth_method;
  }

  const errors: FieldError[] = [];
  const development = config.node_env === 'development' || config.node_env === 'test';
  if ((type === 'spa' || type === 'native') && m.token_endpoint_auth_method !== 'none') {
    errors.push({ field: 'token_endpoint_auth_method', message: `${type} clients are public: token_endpoint_auth_method must be 'none'` });
  }
  if (m.token_endpoint_auth_method === 'none' && m.grant_types.includes('client_credentials')) {
    errors.push({ field: 'grant_types', message: 'client_credentials requires a confidential client (token_endpoint_auth_method other than none)' });
  }
  if (m.response_types.includes('code') !== m.grant_types.includes('authorization_code')) {
    errors.push({ field: 'response_types', message: "response type 'code' goes together with the authorization_code grant" });
  }
  if (m.grant_types.includes('refresh_token') && !m.grant_types.includes('authorization_code') && !m.grant_types.includes('urn:ietf:params:oauth:grant-type:device_code')) {
    errors.push({ field: 'grant_types', message: 'refresh_token needs authorization_code or the device_code grant' });
  }
  // A grant listed twice is refused as a redirect URI listed twice is, not stored as given.
  if (Array.isArray(input.grant_types)) {
    m.grant_types.forEach((grant, i) => {
      if (m.grant_types.indexOf(grant) !== i) errors.push({ field: `grant_types.${i}`, message: `is listed twice (also at ${m.grant_types.indexOf(grant)})` });
    });
  }
  for (const field of ['redirect_uris', 'post_logout_redirect_uris'] as const) {
    // Checked on the list a request gives (one stored before these two rules is left as it is).
    const given = Array.isArray(input[field]);
    m[field].forEach((uri, i) => {
      const problem = checkRedirect(uri, type, development) ?? (given ? listProblem(m[field], uri, i) : undefined);
      if (problem) errors.push({ field: `${field}.${i}`, message: problem });
    });
  }
  // A public client always uses PKCE (provider.ts): asking for false is refused rather than stored
  // and ignored; a false kept from the client's confidential days is brought in line.
  if (m.token_endpoint_auth_method === 'none' && m.require_pkce === false) {
    if (supplied.require_pkce === false) errors.push({ field: 'require_pkce', message: 'public clients always use PKCE: require_pkce cannot be false' });
    else m.require_pkce = true;
  }
  if (m.token_endpoint_auth_method === 'private_key_jwt' && !m.jwks && !m.jwks_uri) {
    errors.push({ field: 'jwks', message: 'private_key_jwt needs jwks or jwks_uri' });
  }
  // URLs the service will fetch or post to obey the outbound rule already when stored (src/outbound).
  const policy = outboundPolicy(config);
  for (const field of ['jwks_uri', 'backchannel_logout_uri'] as const) {
    const uri = m[field];
    const problem = uri ? urlProblem(uri, policy) : undefined;
    if (problem) errors.push({ field, message: problem });
  }
  // OIDC Back-Channel Logout 1.0 2.2: an absolute URI (no fragment); http only for a confidential client.
  if (m.backchannel_logout_uri) {
    const uri = new URL(m.backchannel_logout_uri);
    if (m.backchannel_logout_uri.includes('#')) errors.push({ field: 'backchannel_logout_uri', message: 'must not contain a fragment' });
    else if (uri.protocol === 'http:' && m.token_endpoint_auth_method === 'none' && !(development && LOOPBACK.has(uri.hostname))) {
      errors.push({ field: 'backchannel_logout_uri', message: 'a public client must use https for back-channel logout' });
    }
  }
  if (m.jwks && m.jwks_uri) errors.push({ field: 'jwks', message: 'jwks and jwks_uri are mutually exclusive' });
  if (m.jwks) errors.push(...jwksProblems(m.jwks));
  // Keys only for encryption (or naming an encryption algorithm) would refuse every assertion.
  if (m.token_endpoint_auth_method === 'private_key_jwt' && m.jwks && !m.jwks.keys.some(canVerifySignatures)) {
    errors.push({ field: 'jwks', message: 'private_key_jwt needs a key that verifies signatures (use sig or none, a signature alg or none)' });
  }
  if (m.id_token_signed_response_alg && !config.security.key_store.algorithms.includes(m.id_token_signed_response_alg as never)) {
    errors.push({ field: 'id_token_signed_response_alg', message: `must be one of ${config.security.key_store.algorithms.join(', ')}` });
  }
  if (m.subject_type === 'pairwise' && new Set(m.redirect_uris.map((u) => new URL(u).host)).size > 1) {
    errors.push({ field: 'subject_type', message: 'pairwise clients must use redirect URIs of a single host' });
  }
  if (errors.length) throw new Invalid(errors);
  return m;
}
