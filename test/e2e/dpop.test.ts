/**
 * Issue 18 item 8: DPoP (RFC 9449) on every path that discovery advertises it for, and PAR, with
 * openid-client's own helpers (getDPoPHandle, the DPoP option, buildAuthorizationUrlWithPAR):
 * - client_credentials with a proof (the fast path hands it to oidc-provider): token_type DPoP,
 *   cnf.jkt in the token; a replayed proof is refused;
 * - introspection reports cnf.jkt and token_type DPoP;
 * - the Management API takes a bound token only as `Authorization: DPoP` with a valid proof (typ,
 *   key = cnf.jkt, htm, htu, iat, single-use jti, ath), never as Bearer;
 * - authorization code with PAR and DPoP, then userinfo with the proof.
 */
import { createHash, randomUUID } from 'node:crypto';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser } from '../helpers/users.js';

let t: TestApp;
let service: Record<string, any>;
let config: oidc.Configuration;
let keys: CryptoKeyPair;
let jkt: string;

interface Proof {
  privateKey: CryptoKey;
  jwk: JWK;
}
let proofKey: Proof;

const decode = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, any>;

/** A hand-made proof (to replay, or to get one claim wrong on purpose). */
async function proof(htm: string, htu: string, over: Record<string, unknown> = {}, key: Proof = proofKey, typ = 'dpop+jwt'): Promise<string> {
  return new SignJWT({ htm, htu, iat: Math.floor(Date.now() / 1000), jti: randomUUID(), ...over })
    .setProtectedHeader({ alg: 'ES256', typ, jwk: key.jwk })
    .sign(key.privateKey);
}
const ath = (token: string) => createHash('sha256').update(token).digest('base64url');

beforeAll(async () => {
  t = await startTestApp({ SECURITY_RATE_LIMIT_READ: '10000' });
  const admin = await t.token('svc:clients:read svc:clients:write');
  const created = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'DPoP service', grant_types: ['client_credentials'], scope: 'svc:clients:read' } });
  expect(created.status, created.text).toBe(201);
  service = created.json.data;
  config = await oidc.discovery(new URL(t.issuer), service.client_id, undefined, oidc.ClientSecretBasic(service.client_secret), { execute: [oidc.allowInsecureRequests] });
  keys = (await oidc.randomDPoPKeyPair('ES256')) as CryptoKeyPair;
  const pair = await generateKeyPair('ES256', { extractable: true });
  const { kty, crv, x, y } = await exportJWK(pair.publicKey);
  proofKey = { privateKey: pair.privateKey, jwk: { kty, crv, x, y } };
  jkt = await calculateJwkThumbprint(proofKey.jwk);
});
afterAll(async () => t?.close());

describe('discovery', () => {
  it('advertises DPoP and PAR', () => {
    const meta = config.serverMetadata();
    expect(meta.dpop_signing_alg_values_supported).toContain('ES256');
    expect(meta.pushed_authorization_request_endpoint).toBeTruthy();
  });
});

describe('client_credentials with a DPoP proof', () => {
  it('is a DPoP token bound to the key (openid-client DPoP option), and introspection says so', async () => {
    const dpop = oidc.getDPoPHandle(config, keys);
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'svc:clients:read', resource: 'urn:svc:api:v1' }, { DPoP: dpop });
    expect(tokens.token_type.toLowerCase()).toBe('dpop');
    const expected = await calculateJwkThumbprint(await exportJWK(keys.publicKey));
    expect(decode(tokens.access_token).cnf).toEqual({ jkt: expected });

    const info = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(info).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: expected } });

    // At the Management API: with a proof (openid-client signs one per request), 200.
    const res = await oidc.fetchProtectedResource(config, tokens.access_token, new URL(`${t.url}/api/v1/clients?limit=1`), 'GET', undefined, undefined, { DPoP: dpop });
    expect(res.status).toBe(200);
  });

  it('without a proof stays Bearer (unbound), as before', async () => {
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'svc:clients:read' });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(decode(tokens.access_token).cnf).toBeUndefined();
  });

  it('refuses a replayed proof and a proof for another URL or method', async () => {
    const endpoint = config.serverMetadata().token_endpoint!;
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(service.client_id)}:${encodeURIComponent(service.client_secret)}`).toString('base64')}`;
    const post = (dpop: string) =>
      fetch(endpoint, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded', dpop }, body: 'grant_type=client_credentials&scope=svc%3Aclients%3Aread' });
    const once = await proof('POST', endpoint);
    const first = await post(once);
    expect(first.status, await first.clone().text()).toBe(200);
    expect(((await first.json()) as { token_type: string }).token_type).toBe('DPoP');
    const replay = await post(once);
    expect(replay.status).toBe(400);
    // oidc-provider answers a replayed proof with invalid_grant (its checkDpopReplay), no token.
    const replayed = (await replay.json()) as { error: string; access_token?: string };
    expect(replayed.error).toBe('invalid_grant');
    expect(replayed.access_token).toBeUndefined();
    for (const bad of [await proof('GET', endpoint), await proof('POST', `${endpoint}/elsewhere`), await proof('POST', endpoint, { iat: Math.floor(Date.now() / 1000) - 3600 })]) {
      const res = await post(bad);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('invalid_dpop_proof');
    }
  });
});

describe('the Management API with a DPoP-bound token', () => {
  let token: string;
  const URL_ = () => `${t.url}/api/v1/clients`;
  beforeAll(async () => {
    const endpoint = config.serverMetadata().token_endpoint!;
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(service.client_id)}:${encodeURIComponent(service.client_secret)}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
        dpop: await proof('POST', endpoint),
      },
      body: 'grant_type=client_credentials&scope=svc%3Aclients%3Aread',
    });
    token = ((await res.json()) as { access_token: string }).access_token;
    expect(decode(token).cnf).toEqual({ jkt });
  });
  const call = (headers: Record<string, string>) => api(t, 'GET', '/api/v1/clients', { headers });

  it('accepts it as DPoP with a valid proof, once per proof', async () => {
    const p = await proof('GET', URL_(), { ath: ath(token) });
    expect((await call({ authorization: `DPoP ${token}`, dpop: p })).status).toBe(200);
    const replay = await call({ authorization: `DPoP ${token}`, dpop: p });
    expect(replay.status).toBe(401);
    expect(replay.json.detail).toMatch(/replay/);
  });

  it('refuses it as Bearer, and without a proof', async () => {
    const bearer = await call({ authorization: `Bearer ${token}` });
    expect(bearer.status).toBe(401);
    expect(bearer.json.detail).toMatch(/DPoP-bound/);
    expect((await call({ authorization: `DPoP ${token}` })).status).toBe(401);
  });

  it('refuses proofs with any claim wrong: htm, htu, iat, ath, type, another key, a symmetric key', async () => {
    const other = await generateKeyPair('ES256', { extractable: true });
    const { kty, crv, x, y } = await exportJWK(other.publicKey);
    const wrong: Array<[string, string]> = [
      ['htm', await proof('POST', URL_(), { ath: ath(token) })],
      ['htu', await proof('GET', `${t.url}/api/v1/users`, { ath: ath(token) })],
      ['htu host', await proof('GET', URL_().replace('127.0.0.1', 'evil.example'), { ath: ath(token) })],
      ['iat', await proof('GET', URL_(), { ath: ath(token), iat: Math.floor(Date.now() / 1000) - 600 })],
      ['ath', await proof('GET', URL_(), { ath: ath('another-token') })],
      ['no ath', await proof('GET', URL_())],
      ['typ', await proof('GET', URL_(), { ath: ath(token) }, proofKey, 'JWT')],
      ['key', await proof('GET', URL_(), { ath: ath(token) }, { privateKey: other.privateKey, jwk: { kty, crv, x, y } })],
      ['htu user info', await proof('GET', URL_().replace('http://', 'http://evil@'), { ath: ath(token) })],
      ['hs256', await new SignJWT({ htm: 'GET', htu: URL_(), iat: Math.floor(Date.now() / 1000), jti: randomUUID(), ath: ath(token) }).setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: 'c2VjcmV0' } }).sign(new TextEncoder().encode('secret'))],
    ];
    for (const [what, p] of wrong) {
      const res = await call({ authorization: `DPoP ${token}`, dpop: p });
      expect(res.status, `${what}: ${res.text}`).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      // RFC 9449 7.1: in the DPoP scheme, naming the algorithms discovery publishes.
      expect(res.headers.get('www-authenticate'), what).toBe('DPoP error="invalid_dpop_proof", algs="ES256 Ed25519 EdDSA"');
    }
  });

  it('answers a request in the DPoP scheme with DPoP challenges (invalid_token, insufficient_scope); Bearer requests keep the Bearer one', async () => {
    const bearer = await call({ authorization: `Bearer ${token}` });
    expect(bearer.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    const plain = await t.token('svc:clients:read');
    const unbound = await call({ authorization: `DPoP ${plain}`, dpop: await proof('GET', URL_(), { ath: ath(plain) }) });
    expect(unbound.headers.get('www-authenticate')).toBe('DPoP error="invalid_token", algs="ES256 Ed25519 EdDSA"');
    const users = await api(t, 'GET', '/api/v1/users', { headers: { authorization: `DPoP ${token}`, dpop: await proof('GET', `${t.url}/api/v1/users`, { ath: ath(token) }) } });
    expect(users.status).toBe(403);
    expect(users.headers.get('www-authenticate')).toBe('DPoP error="insufficient_scope", scope="svc:users:read", algs="ES256 Ed25519 EdDSA"');
  });

  it('refuses an unbound token sent as DPoP', async () => {
    const plain = await t.token('svc:clients:read');
    expect((await call({ authorization: `DPoP ${plain}`, dpop: await proof('GET', URL_(), { ath: ath(plain) }) })).status).toBe(401);
    expect((await call({ authorization: `Bearer ${plain}` })).status).toBe(200);
  });
});

describe('authorization code with PAR and DPoP (openid-client)', () => {
  let browser: Browser;
  let rp: RpServer;
  beforeAll(async () => {
    rp = await startRpServer();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await rp?.close();
  });

  it('pushes the request, signs in, and gets DPoP-bound tokens that userinfo accepts with a proof', async () => {
    const user = await createUser(t, { email_verified: true });
    const web = await createClient(t, { client_name: 'PAR app', application_type: 'web', redirect_uris: [`${rp.origin}/cb`], grant_types: ['authorization_code'], scope: 'openid email' });
    const rpConfig = await oidc.discovery(new URL(t.issuer), web.client_id, web.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const dpop = oidc.getDPoPHandle(rpConfig, await oidc.randomDPoPKeyPair('ES256'));
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = await oidc.buildAuthorizationUrlWithPAR(
      rpConfig,
      { redirect_uri: `${rp.origin}/cb`, scope: 'openid email', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' },
      { DPoP: dpop },
    );
    expect(url.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    expect(url.searchParams.get('redirect_uri')).toBeNull();

    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(url.href);
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL(`${rp.origin}/cb**`);
      const tokens = await oidc.authorizationCodeGrant(rpConfig, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP: dpop });
      expect(tokens.token_type.toLowerCase()).toBe('dpop');
      const info = await oidc.fetchUserInfo(rpConfig, tokens.access_token, user.id, { DPoP: dpop });
      expect(info.email).toBe(user.email);
      // The bound token without its proof is refused at userinfo.
      const bare = await fetch(rpConfig.serverMetadata().userinfo_endpoint!, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(bare.status).toBe(401);
    } finally {
      await context.close();
    }
  });
});
