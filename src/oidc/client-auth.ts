/**
 * Client authentication for the endpoints the actor answers itself (token for client_credentials,
 * introspection), with the five methods of spec 5 rule 2, written after oidc-provider's
 * lib/shared/client_auth.js so both paths answer alike: the same checks in the same order, the
 * same error codes and descriptions, the same `WWW-Authenticate: Basic realm="<issuer>", ...`
 * challenge on a 401 when an Authorization header was sent. A method other than the registered
 * one (beyond Basic and client_secret_post, which stand in for each other) and client attestation
 * (a feature this product does not enable) are left to oidc-provider: the caller falls back on
 * `fallback`.
 */
import { OAuthError } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';
import type { ClientRecord } from '../storage/types.js';
import { AssertionError, parseAssertion, verifyClientAssertion, type AssertionServices } from './client-assertion.js';
import { secretMatches } from '../clients/secrets.js';
import { OIDC_ROUTES } from './provider.js';
import { CLIENT_NOT_FOUND, noteClientAuthFailure, type ClientAuthFailureReason } from './client-auth-failures.js';

export type AuthMethod = ClientRecord['metadata']['token_endpoint_auth_method'];

export interface AuthenticatedClient {
  record: ClientRecord;
  method: AuthMethod;
}

export interface ClientAuthHost {
  readonly issuer: string;
  readonly assertions: AssertionServices;
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
}

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const NO_VSCHAR = /[^\x20-\x7E]/;
const SECRET_METHODS: ReadonlySet<AuthMethod> = new Set(['client_secret_basic', 'client_secret_post']);

const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description);

function isValidBase64(input: string): boolean {
  const match = /^([A-Za-z0-9+/]*)(={0,2})$/.exec(input);
  if (!match?.[1]) return false;
  const remainder = match[1].length % 4;
  if (!match[2]) return remainder !== 1;
  return (match[1].length + match[2].length) % 4 === 0 && match[2].length === 4 - remainder;
}

function decodeAuthToken(token: string): string {
  const value = decodeURIComponent(token.replace(/\+/g, '%20'));
  if (NO_VSCHAR.test(value)) throw new Error('invalid character found');
  return value;
}

/** An assertion naming no client: invalid_client, noted as an invalid assertion (of the client_id sent, if any). */
function assertionWithoutClient(req: HttpRequest, detail: string): OAuthError {
  noteClientAuthFailure(req, { reason: 'invalid_assertion', detail });
  return new OAuthError(401, 'invalid_client', 'client authentication failed');
}

interface Presented {
  clientId: string;
  methods: readonly AuthMethod[];
  secret?: string;
  assertion?: string;
}

/** Which client and which methods the request claims (oidc-provider's first half); throws invalid_request. */
function presented(req: HttpRequest, form: URLSearchParams): Presented | 'fallback' {
  if (req.headers['oauth-client-attestation'] !== undefined || req.headers['oauth-client-attestation-pop'] !== undefined) return 'fallback';
  const authorization = req.headers.authorization;
  const assertion = form.get('client_assertion') ?? undefined;
  const secretParam = form.get('client_secret') || undefined;
  if ([authorization, assertion, secretParam].filter(Boolean).length > 1) throw invalidRequest('client authentication must only be provided using one mechanism');

  let clientId: string | undefined;
  const setClientId = (value: string) => {
    if (clientId !== undefined && value !== clientId) throw invalidRequest('client_id mismatch');
    clientId = value;
  };
  const idParam = form.get('client_id');
  if (idParam !== null) setClientId(idParam);

  let out: Omit<Presented, 'clientId'>;
  if (secretParam) {
    out = { methods: ['client_secret_post'], secret: secretParam };
  } else if (authorization !== undefined) {
    const parts = authorization.split(' ');
    if (parts.length !== 2 || parts[0]!.toLowerCase() !== 'basic' || !isValidBase64(parts[1]!)) throw invalidRequest('invalid authorization header value format');
    const basic = Buffer.from(parts[1]!, 'base64').toString('utf8');
    const i = basic.indexOf(':');
    if (i === -1) throw invalidRequest('invalid authorization header value format');
    let id: string;
    let secret: string;
    try {
      id = decodeAuthToken(basic.slice(0, i));
      secret = decodeAuthToken(basic.slice(i + 1));
    } catch {
      throw invalidRequest('client_id and client_secret in the authorization header are not properly encoded');
    }
    setClientId(id);
    if (!secret) throw invalidRequest('client_secret must be provided in the Authorization header');
    out = { methods: ['client_secret_basic'], secret };
  } else if (assertion !== undefined) {
    const parsed = parseAssertion(assertion);
    if (!parsed) throw invalidRequest('invalid client_assertion format');
    const sub = parsed.payload.sub;
    if (!sub) throw assertionWithoutClient(req, 'sub (JWT subject) must be provided in the client_assertion JWT');
    const type = form.get('client_assertion_type');
    if (type === null) throw invalidRequest('client_assertion_type must be provided');
    if (type !== ASSERTION_TYPE) throw invalidRequest(`client_assertion_type must have value ${ASSERTION_TYPE}`);
    // A sub that is not a string names no client (oidc-provider's Client.find finds none).
    if (typeof sub !== 'string') {
      if (clientId !== undefined) throw invalidRequest('client_id mismatch');
      throw assertionWithoutClient(req, 'sub (JWT subject) must be a string');
    }
    setClientId(sub);
    out = { methods: ['client_secret_jwt', 'private_key_jwt'], assertion };
  } else {
    out = { methods: ['none'] };
  }
  if (!clientId) throw invalidRequest('no client authentication mechanism provided');
  return { clientId, ...out };
}

/**
 * Authenticates the client of a token or introspection request. `endpointUrl` is the absolute URL
 * of the endpoint called (an accepted assertion audience besides the issuer and the token endpoint).
 */
export async function authenticateClient(
  host: ClientAuthHost,
  req: HttpRequest,
  form: URLSearchParams,
  endpointUrl: string,
): Promise<AuthenticatedClient | 'fallback'> {
  const claim = presented(req, form);
  if (claim === 'fallback') return claim;
  // The answer never says why; the throttle audits it (auth-throttle.ts, client-auth-failures.ts).
  const fail = (reason: ClientAuthFailureReason, detail: string, exists = true): never => {
    noteClientAuthFailure(req, { reason, detail, exists });
    const headers: Record<string, string> =
      req.headers.authorization !== undefined ? { 'www-authenticate': `Basic realm="${host.issuer}", error="invalid_client", error_description="client authentication failed"` } : {};
    throw new OAuthError(401, 'invalid_client', 'client authentication failed', headers);
  };

  const record = await host.loadClient(claim.clientId);
  if (!record || !record.active) return fail(record ? 'client_inactive' : 'unknown_client', CLIENT_NOT_FOUND, record !== undefined);
  const method = record.metadata.token_endpoint_auth_method;
  // oidc-provider's rule: client_secret_basic and client_secret_post stand in for each other
  // (relying parties rely on it: openid-client sends client_secret_post by default); any other
  // mismatch is handed to oidc-provider, which refuses it (and the refusal is audited there).
  const standIn = SECRET_METHODS.has(method) && claim.methods.some((m) => SECRET_METHODS.has(m));
  if (!claim.methods.includes(method) && !standIn) return 'fallback';

  if (method === 'client_secret_basic' || method === 'client_secret_post') {
    if (!secretMatches(claim.secret ?? '', record.secret_hash)) return fail('wrong_secret', 'invalid secret provided');
  } else if (method === 'client_secret_jwt' || method === 'private_key_jwt') {
    const audiences = new Set([host.issuer, host.issuer + OIDC_ROUTES.token, endpointUrl]);
    try {
      await verifyClientAssertion(host.assertions, record, claim.assertion!, audiences);
    } catch (err) {
      if (err instanceof AssertionError) return fail('invalid_assertion', err.message);
      throw err;
    }
  }
  return { record, method };
}
