/**
 * One-off HTTP calls made outside the load windows: preparing credentials and checking that each
 * scenario's request really succeeds before and after it is hammered; and `tenantRequest`, raw
 * node:http addressed to a tenant by header or subdomain (fetch cannot set Host), shared with the
 * test suite (test/helpers/tenant-http.ts).
 */
import { request as httpRequest, type Agent, type IncomingHttpHeaders } from 'node:http';
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

// ---------------------------------------------------------------------------------------------
// Requests addressed to a tenant of a multi-tenant product on 127.0.0.1.

export interface TenantResponse {
  status: number;
  headers: Record<string, string>;
  setCookie: string[];
  text: string;
  /** The parsed body, or undefined when it is not JSON; read it with `stringField`. */
  json: unknown;
}

export interface TenantRequest {
  /** Tenant by header (x-tenant-id). */
  tenant?: string;
  /** Tenant by subdomain: Host `<sub>.localhost:<port>`. */
  sub?: string;
  /** Bearer token. */
  token?: string;
  /** A whole Authorization header (e.g. Basic). */
  auth?: string;
  cookie?: string;
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** A keep-alive agent (benches); default: a connection per request. */
  agent?: Agent;
  /** Milliseconds before the request is abandoned (default: none). */
  timeoutMs?: number;
}

function flat(h: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')]));
}

export function tenantRequest(port: number, method: string, path: string, o: TenantRequest = {}): Promise<TenantResponse> {
  const headers: Record<string, string> = { host: o.sub ? `${o.sub}.localhost:${port}` : `localhost:${port}`, ...(o.headers ?? {}) };
  if (o.tenant) headers['x-tenant-id'] = o.tenant;
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.auth) headers.authorization = o.auth;
  if (o.cookie) headers.cookie = o.cookie;
  let payload: string | undefined;
  if (o.form) {
    payload = new URLSearchParams(o.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (o.body !== undefined) {
    payload = JSON.stringify(o.body);
    headers['content-type'] = 'application/json';
  }
  if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, ...(o.agent ? { agent: o.agent } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: flat(res.headers), setCookie: res.headers['set-cookie'] ?? [], text, json });
      });
    });
    if (o.timeoutMs) req.setTimeout(o.timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', (err) => reject(new Error(`${method} ${path}: ${err.message}`)));
    req.end(payload);
  });
}

/** A nested member of parsed JSON (`field(json, 'data', 'client_id')`), or undefined. */
export function field(value: unknown, ...path: string[]): unknown {
  let v = value;
  for (const key of path) {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/** A string member of parsed JSON, or undefined. */
export function stringField(value: unknown, ...path: string[]): string | undefined {
  const v = field(value, ...path);
  return typeof v === 'string' ? v : undefined;
}

/** The payload of a compact JWS (not verified: the checks compare claims, not signatures). */
export function claimsOf(jwt: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString());
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
