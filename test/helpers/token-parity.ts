/**
 * Token endpoint answers of the product (TenantActor.handleOidc; a spy on the bridge tells whether
 * oidc-provider was asked) and of oidc-provider (TenantActor.bridge) for twin requests, compared in
 * everything but the values that are new per token: the answer's members, the ID token's header
 * and claims, and the stored access and refresh tokens (test/e2e/refresh-direct.test.ts,
 * code-direct.test.ts).
 */
import { expect, vi } from 'vitest';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';
import { bearerProtector } from '../../src/oidc/bearer-at-rest.js';
import type { TenantActor } from '../../src/tenancy/actor.js';
import type { TestApp } from './app.js';
import type { CodeFlowClient } from './code-flow.js';

export type Json = Record<string, any>;

export interface TokenRequest {
  client: CodeFlowClient;
  form: Record<string, string>;
  /** Send the secret in the body (client_secret_post) instead of the Authorization header. */
  post?: boolean;
  secret?: string;
  headers?: Record<string, string>;
}

/** A token request as the front door hands it to the actor; a public client sends only its client_id. */
export function tokenRequest(t: TestApp, o: TokenRequest): HttpRequest {
  const form = new URLSearchParams(o.form);
  const headers: Record<string, string> = { host: new URL(t.issuer).host, 'content-type': 'application/x-www-form-urlencoded', ...o.headers };
  const secret = o.secret ?? o.client.client_secret;
  if (!secret) form.set('client_id', o.client.client_id);
  else if (o.post) {
    form.set('client_id', o.client.client_id);
    form.set('client_secret', secret);
  } else headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(o.client.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  const body = Buffer.from(form.toString());
  headers['content-length'] = String(body.length);
  return { id: 'token-parity', method: 'POST', path: '/oidc/v1/token', rawQuery: '', headers, ip: '127.0.0.1', body, params: {} };
}

export interface Answer {
  res: HttpResponse;
  json: Json;
  /** True when oidc-provider was not asked (product answers only). */
  direct: boolean;
}

/** The product's answer, and whether oidc-provider was asked. */
export async function viaProduct(actor: TenantActor, req: HttpRequest): Promise<Answer> {
  const spy = vi.spyOn(actor, 'bridge');
  try {
    const res = await actor.handleOidc(req);
    return { res, direct: spy.mock.calls.length === 0, json: JSON.parse(String(res.body)) };
  } finally {
    spy.mockRestore();
  }
}

/** oidc-provider's answer. */
export async function viaStock(actor: TenantActor, req: HttpRequest): Promise<Answer> {
  const res = await actor.bridge(req);
  return { res, direct: false, json: JSON.parse(String(res.body)) };
}

/**
 * The same code or refresh token sent twice at once (`send` builds and sends one request): exactly
 * one is answered, the other is a replay's invalid_grant. Returns the answered one.
 */
export async function spentOnce(send: () => Promise<Answer>): Promise<Answer> {
  const answers = await Promise.all([send(), send()]);
  const answered = answers.filter((a) => a.res.status === 200);
  expect(answered).toHaveLength(1);
  expect(answers.find((a) => a.res.status !== 200)).toMatchObject({ res: { status: 400 }, json: { error: 'invalid_grant' } });
  return answered[0]!;
}

export const decodeJwt = (jwt: string) => jwt.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString())) as [Json, Json];

/** A stored artefact (refresh tokens under their keyed id, bearer-at-rest.ts). */
export async function storedRow(t: TestApp, model: 'RefreshToken' | 'AccessToken' | 'AuthorizationCode', value: string) {
  const id = model === 'RefreshToken' ? bearerProtector(t.app.ctx.sealer).storedId('default', model, value) : value;
  return t.app.ctx.storage.oidc.find('default', model, id);
}

/** The payload without the members that are new per token (each checked to be there). */
export function shape(payload: Json, fresh: readonly string[]): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(payload)) {
    if (fresh.includes(k)) expect(v, k).toBeDefined();
    else out[k] = v;
  }
  return out;
}

/**
 * Both answers successful and alike: the same members in the same order, the same ID token header
 * and claims (but iat/exp, with the same lifetime), the stored access and refresh tokens alike but
 * for ids, times and grant.
 */
export async function expectAlike(t: TestApp, product: Answer, stock: Answer): Promise<void> {
  expect(product.direct).toBe(true);
  expect(product.res.status, String(product.res.body)).toBe(200);
  expect(stock.res.status, String(stock.res.body)).toBe(200);
  for (const h of ['content-type', 'cache-control', 'vary', 'access-control-allow-origin', 'access-control-expose-headers', 'www-authenticate']) {
    expect(product.res.headers?.[h], h).toBe(stock.res.headers?.[h]);
  }
  const fresh = ['access_token', 'refresh_token', 'id_token'];
  expect(Object.keys(product.json)).toEqual(Object.keys(stock.json));
  expect(shape(product.json, fresh)).toEqual(shape(stock.json, fresh));
  expect(product.json.access_token.length).toBe(stock.json.access_token.length);

  if (stock.json.id_token !== undefined) {
    const [ph, pp] = decodeJwt(product.json.id_token);
    const [sh, sp] = decodeJwt(stock.json.id_token);
    expect(ph).toEqual(sh);
    expect(Object.keys(pp)).toEqual(Object.keys(sp));
    expect(pp.exp - pp.iat).toBe(sp.exp - sp.iat);
    expect(shape(pp, ['iat', 'exp'])).toEqual(shape(sp, ['iat', 'exp']));
  }

  const pat = (await storedRow(t, 'AccessToken', product.json.access_token))!;
  const sat = (await storedRow(t, 'AccessToken', stock.json.access_token))!;
  expect(Object.keys(pat.payload)).toEqual(Object.keys(sat.payload));
  const atFresh = ['iat', 'exp', 'jti', 'grantId'];
  expect(shape(pat.payload, atFresh)).toEqual(shape(sat.payload, atFresh));
  expect(pat.payload.jti).toBe(product.json.access_token);
  expect(pat.expires_at).toBe(pat.payload.exp);

  if (stock.json.refresh_token !== undefined) {
    expect(product.json.refresh_token.length).toBe(stock.json.refresh_token.length);
    const prt = (await storedRow(t, 'RefreshToken', product.json.refresh_token))!;
    const srt = (await storedRow(t, 'RefreshToken', stock.json.refresh_token))!;
    expect(Object.keys(prt.payload)).toEqual(Object.keys(srt.payload));
    const rtFresh = ['iat', 'exp', 'iiat', 'grantId', 'jti_sealed'];
    expect(shape(prt.payload, rtFresh)).toEqual(shape(srt.payload, rtFresh));
    expect((prt.payload.exp as number) - (prt.payload.iat as number)).toBe((srt.payload.exp as number) - (srt.payload.iat as number));
    expect(prt.expires_at).toBe(prt.payload.exp);
  }
}
