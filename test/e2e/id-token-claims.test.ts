/**
 * Issue 18 item 2: the ID token carries the claims the granted scopes allow (email, profile) by
 * default, as relying parties with default settings expect; `oidc.id_token_claims: "conform"`
 * (global setting or tenant override) keeps OIDC Core 5.4 strictly (claims at userinfo only).
 * openid-client is the relying party, headless Chromium the user.
 */
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configChangedChannel } from '../../src/events/bus.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

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

interface Rp {
  t: TestApp;
  user: TestUser;
  config: oidc.Configuration;
}

async function setUp(env: Record<string, string> = {}): Promise<Rp> {
  const t = await startTestApp(env);
  const user = await createUser(t, { email_verified: true });
  const client = await createClient(t, {
    client_name: 'Claims App',
    application_type: 'web',
    redirect_uris: [`${rp.origin}/cb`],
    grant_types: ['authorization_code'],
    scope: 'openid profile email',
  });
  const config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  return { t, user, config };
}

/** One authorization code flow in a fresh browser context; the token response. */
async function signIn({ t, user, config }: Rp, scope: string) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: `${rp.origin}/cb`, scope, state, nonce, prompt: 'consent',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(url.href);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${rp.origin}/cb**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    expect(tokens.access_token, `issuer ${t.issuer}`).toBeTruthy();
    return tokens;
  } finally {
    await context.close();
  }
}

describe('default (granted)', () => {
  let rpA: Rp;
  beforeAll(async () => {
    rpA = await setUp();
  });
  afterAll(async () => rpA?.t.close());

  it('puts email and profile claims into the ID token alongside the access token', async () => {
    const tokens = await signIn(rpA, 'openid profile email');
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ sub: rpA.user.id, email: rpA.user.email, email_verified: true, name: 'Ada Lovelace', given_name: 'Ada', family_name: 'Lovelace' });
    expect(claims.preferred_username).toMatch(/^ada/);
  });

  it('only the claims of the granted scopes: with openid alone, no e-mail or profile', async () => {
    const claims = (await signIn(rpA, 'openid')).claims()!;
    expect(claims.sub).toBe(rpA.user.id);
    for (const k of ['email', 'email_verified', 'name', 'given_name', 'preferred_username']) expect(claims, k).not.toHaveProperty(k);
    // email without profile: the e-mail, not the names.
    const emailOnly = (await signIn(rpA, 'openid email')).claims()!;
    expect(emailOnly.email).toBe(rpA.user.email);
    expect(emailOnly).not.toHaveProperty('name');
  });

  it('a tenant override "conform" makes the ID token strict again (claims at userinfo only), without a restart', async () => {
    const { storage, events, config } = rpA.t.app.ctx;
    await storage.tenantConfig.put('default', 'oidc', { id_token_claims: 'conform' });
    await events.publish(configChangedChannel('default', config.redis.key_prefix), { tenant: 'default', section: 'oidc', at: new Date().toISOString() });
    // The change reaches the actor through the event bus (bounded wait, not a timing assertion).
    for (let i = 0; i < 100 && rpA.t.app.pool.peek('default')?.config.oidc.id_token_claims !== 'conform'; i++) await new Promise((r) => setTimeout(r, 20));
    expect(rpA.t.app.pool.peek('default')?.config.oidc.id_token_claims).toBe('conform');

    const tokens = await signIn(rpA, 'openid profile email');
    const claims = tokens.claims()!;
    expect(claims.sub).toBe(rpA.user.id);
    expect(claims).not.toHaveProperty('email');
    expect(claims).not.toHaveProperty('name');
    const info = await oidc.fetchUserInfo(rpA.config, tokens.access_token, rpA.user.id);
    expect(info).toMatchObject({ email: rpA.user.email, name: 'Ada Lovelace' });
  });
});

describe('global OIDC_ID_TOKEN_CLAIMS=conform', () => {
  let rpB: Rp;
  beforeAll(async () => {
    rpB = await setUp({ OIDC_ID_TOKEN_CLAIMS: 'conform' });
  });
  afterAll(async () => rpB?.t.close());

  it('keeps the strict OIDC Core 5.4 behaviour: no e-mail or profile claims in the ID token', async () => {
    const tokens = await signIn(rpB, 'openid profile email');
    const claims = tokens.claims()!;
    expect(claims.sub).toBe(rpB.user.id);
    for (const k of ['email', 'email_verified', 'name', 'given_name', 'preferred_username']) expect(claims, k).not.toHaveProperty(k);
    expect((await oidc.fetchUserInfo(rpB.config, tokens.access_token, rpB.user.id)).email).toBe(rpB.user.email);
  });
});
