/**
 * Client authentication for the endpoints the actor answers itself (token for client_credentials,
 * introspection): client_secret_basic and client_secret_post. JWT assertions (client_secret_jwt,
 * private_key_jwt) are left to oidc-provider: the caller falls back when `fallback` is returned.
 */
import { OAuthError } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';
import type { ClientRecord } from '../storage/types.js';
import { secretMatches } from './client-metadata.js';

export type AuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

export interface AuthenticatedClient {
  record: ClientRecord;
  method: AuthMethod;
}

/** One description for every failure, so the answer never tells whether the client exists. */
const invalidClient = (basic = false) =>
  new OAuthError(401, 'invalid_client', 'client authentication failed', basic ? { 'www-authenticate': 'Basic realm="svc"' } : {});

function decodeBasicPart(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, '%20'));
  } catch {
    throw new OAuthError(400, 'invalid_request', 'client credentials in the Authorization header are not properly encoded');
  }
}

export async function authenticateClient(
  req: HttpRequest,
  form: URLSearchParams,
  load: (clientId: string) => Promise<ClientRecord | undefined>,
): Promise<AuthenticatedClient | 'fallback'> {
  if (form.has('client_assertion') || form.has('client_assertion_type')) return 'fallback';
  const header = req.headers.authorization;
  let clientId: string | undefined;
  let secret: string | undefined;
  let method: AuthMethod;
  if (header !== undefined && /^basic /i.test(header)) {
    if (form.has('client_secret')) throw new OAuthError(400, 'invalid_request', 'client authentication must only be provided using one mechanism');
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i < 0) throw new OAuthError(400, 'invalid_request', 'invalid authorization header value format');
    clientId = decodeBasicPart(decoded.slice(0, i));
    secret = decodeBasicPart(decoded.slice(i + 1));
    method = 'client_secret_basic';
    const bodyId = form.get('client_id');
    if (bodyId !== null && bodyId !== clientId) throw new OAuthError(400, 'invalid_request', 'mismatch in body and authorization client ids');
    if (!secret) throw new OAuthError(400, 'invalid_request', 'client_secret must be provided in the Authorization header');
  } else if (form.has('client_secret')) {
    clientId = form.get('client_id') ?? undefined;
    secret = form.get('client_secret') ?? '';
    method = 'client_secret_post';
  } else {
    clientId = form.get('client_id') ?? undefined;
    method = 'none';
  }
  if (!clientId) throw new OAuthError(400, 'invalid_request', 'no client authentication mechanism provided');

  const record = await load(clientId);
  const basic = method === 'client_secret_basic';
  if (!record || !record.active) throw invalidClient(basic);
  if (record.metadata.token_endpoint_auth_method !== method) throw invalidClient(basic);
  if (method !== 'none' && !secretMatches(secret ?? '', record.secret_hash)) throw invalidClient(basic);
  return { record, method };
}
