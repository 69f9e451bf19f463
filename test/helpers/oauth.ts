/** OAuth/OIDC and Management helpers for end-to-end tests: token requests, introspection, forged tokens. */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { SigningAlg } from '../../src/config/schema.js';
import { signJwt } from '../../src/keys/jwt.js';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, api, type TestApp } from './app.js';

export const RESOURCE = 'urn:svc:api:v1';

export interface Credentials {
  id: string;
  secret: string;
}

export const bootstrap: Credentials = { id: BOOTSTRAP_ID, secret: BOOTSTRAP_SECRET };

export function basic({ id, secret }: Credentials): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  json: any;
}

/** POST a form to an OIDC endpoint, authenticating with HTTP Basic when credentials are given. */
export async function postForm(t: TestApp, path: string, form: Record<string, string>, creds?: Credentials): Promise<JsonResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (creds) headers.authorization = basic(creds);
  const res = await fetch(`${t.url}${t.app.ctx.config.oidc.path}${path}`, { method: 'POST', headers, body: new URLSearchParams(form) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

/** client_credentials for the Management API resource. */
export function requestToken(t: TestApp, creds: Credentials, scope: string, extra: Record<string, string> = {}): Promise<JsonResponse> {
  return postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope, ...extra }, creds);
}

export async function tokenFor(t: TestApp, creds: Credentials, scope: string): Promise<string> {
  const res = await requestToken(t, creds, scope);
  if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.access_token as string;
}

export function introspect(t: TestApp, token: string, creds: Credentials = bootstrap): Promise<JsonResponse> {
  return postForm(t, '/token/introspection', { token }, creds);
}

/** Creates a client through the Management API; returns the response data (with client_secret). */
export async function createClient(t: TestApp, token: string, body: Record<string, unknown>): Promise<any> {
  const res = await api(t, 'POST', '/api/v1/clients', { token, body });
  if (res.status !== 201) throw new Error(`client create failed: ${res.status} ${res.text}`);
  return res.json.data;
}

/** A confidential client allowed the given Management scopes; returns its credentials. */
export async function serviceClient(t: TestApp, adminToken: string, scope: string, extra: Record<string, unknown> = {}): Promise<Credentials & { data: any }> {
  const data = await createClient(t, adminToken, { client_name: `svc ${randomBytes(3).toString('hex')}`, grant_types: ['client_credentials'], scope, ...extra });
  return { id: data.client_id, secret: data.client_secret, data };
}

/**
 * An access token signed with the running service's own current key (or `foreignKey`), so tests can
 * produce tokens the service would never issue: wrong audience or issuer, expired, other typ.
 */
export async function forgeToken(
  t: TestApp,
  claims: Record<string, unknown> = {},
  opts: { alg?: SigningAlg; typ?: string; foreignKey?: boolean; kid?: string } = {},
): Promise<string> {
  const actor = await t.app.pool.get('default');
  const own = actor.keys.signingKey(opts.alg ?? 'RS256');
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    iss: t.issuer,
    sub: BOOTSTRAP_ID,
    aud: RESOURCE,
    iat: now,
    exp: now + 300,
    jti: randomBytes(8).toString('hex'),
    client_id: BOOTSTRAP_ID,
    scope: 'svc:clients:read svc:clients:write svc:clients:delete',
    ...claims,
  };
  const privateKey = opts.foreignKey ? foreignPrivateKey(own.alg) : own.privateKey;
  return signJwt(payload, { kid: opts.kid ?? own.kid, alg: own.alg, privateKey }, opts.typ ?? 'at+jwt');
}

function foreignPrivateKey(alg: SigningAlg) {
  if (alg === 'RS256') return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  if (alg === 'ES256') return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  return generateKeyPairSync('ed25519').privateKey;
}

/** Decodes a JWT's header and payload without verifying. */
export function peekJwt(token: string): { header: Record<string, unknown>; payload: Record<string, any> } {
  const [h, p] = token.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), payload: JSON.parse(Buffer.from(p!, 'base64url').toString()) };
}
