/**
 * One-off HTTP calls made outside the load windows: preparing credentials and checking that each
 * scenario's request really succeeds before and after it is hammered.
 */
import { OIDC_PATH } from './constants.js';

export interface ClientCredentials {
  client_id: string;
  client_secret: string;
}

export interface PlainResponse {
  status: number;
  body: string;
  /** The Location header of a redirect (redirects are never followed). */
  location?: string;
}

/** RFC 6749 2.3.1: id and secret are form-urlencoded before the Base64 of client_secret_basic. */
export function basicAuth({ client_id, client_secret }: ClientCredentials): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return 'Basic ' + Buffer.from(`${enc(client_id)}:${enc(client_secret)}`).toString('base64');
}

export function form(fields: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) params.set(k, v);
  return params.toString();
}

export async function send(url: string, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<PlainResponse> {
  const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
  const out: PlainResponse = { status: res.status, body: await res.text() };
  const location = res.headers.get('location');
  if (location) out.location = location;
  return out;
}

function parseObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${what}: response is not JSON: ${text.slice(0, 300)}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${what}: response is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/** client_credentials at `${baseUrl}/oidc/v1/token`; without `resource` (and svc scopes on the product) the token is opaque. */
export async function fetchToken(baseUrl: string, client: ClientCredentials, scope?: string, resource?: string): Promise<string> {
  const res = await send(`${baseUrl}${OIDC_PATH}/token`, {
    method: 'POST',
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ grant_type: 'client_credentials', scope, resource }),
  });
  const what = `token for ${client.client_id} at ${baseUrl}`;
  if (res.status !== 200) throw new Error(`${what}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  const token = parseObject(res.body, what).access_token;
  if (typeof token !== 'string') throw new Error(`${what}: no access_token in ${res.body.slice(0, 300)}`);
  return token;
}

/** POST /api/v1/clients on the product; returns the new client's id and secret. */
export async function createProductClient(baseUrl: string, bearer: string, metadata: Record<string, unknown>): Promise<ClientCredentials> {
  const res = await send(`${baseUrl}/api/v1/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify(metadata),
  });
  if (res.status !== 201) throw new Error(`POST /api/v1/clients: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  const data = parseObject(res.body, 'POST /api/v1/clients').data;
  if (!data || typeof data !== 'object') throw new Error('POST /api/v1/clients: no data object');
  const { client_id, client_secret } = data as Record<string, unknown>;
  if (typeof client_id !== 'string' || typeof client_secret !== 'string') throw new Error('POST /api/v1/clients: no client_id/client_secret');
  return { client_id, client_secret };
}

/** POST /api/v1/users on the product; returns the e-mail and password to sign in with. */
export async function createProductUser(baseUrl: string, bearer: string, user: { email: string; password: string }): Promise<{ email: string; password: string }> {
  const res = await send(`${baseUrl}/api/v1/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify(user),
  });
  if (res.status !== 201) throw new Error(`POST /api/v1/users: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return user;
}

/** The protected header of a compact JWS, or undefined for anything else (opaque tokens). */
export function jwtHeader(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const header: unknown = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8'));
    return header && typeof header === 'object' ? (header as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function jsonField(body: string, field: string): unknown {
  try {
    const parsed: unknown = JSON.parse(body);
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>)[field] : undefined;
  } catch {
    return undefined;
  }
}
