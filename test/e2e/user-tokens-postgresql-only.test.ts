/**
 * The direct user-token paths on PostgreSQL without Redis (a single-tenant deployment's choice):
 * there the OIDC artefacts live in PostgreSQL, whose repository reads a token and the grant it
 * names in one statement (OidcPayloadRepository.findWithGrant, issue 17). The code exchange, the
 * refresh and userinfo are answered by the product (a spy on the bridge tells) exactly as
 * oidc-provider answers them; a token whose grant is gone, or names a grant the token was not
 * issued under, is refused by oidc-provider's own words.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpRequest } from '../../src/http/types.js';
import type { TestApp } from '../helpers/app.js';
import { HttpSession, type CodeFlowClient } from '../helpers/code-flow.js';
import { expectAlike, storedRow, tokenRequest, viaProduct, viaStock } from '../helpers/token-parity.js';
import { compareUserinfo, userinfoRequest } from '../helpers/userinfo-parity.js';
import type { TestUser } from '../helpers/users.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65529/cb';

let t: TestApp;
let user: TestUser;
let session: HttpSession;
let basic: CodeFlowClient;
let actor: UserFlowFixture['actor'];

beforeAll(async () => {
  ({ t, user, session, basic, actor } = await startUserFlowFixture(REDIRECT, undefined, { STORAGE_ADAPTER: 'postgresql', REDIS_URL: '' }));
});
afterAll(async () => t?.close());

/** An authorization code for `client` (PKCE S256) through the sign-in pages, and its exchange request. */
async function exchangeFor(client: CodeFlowClient, scope: string, browser = session): Promise<HttpRequest> {
  const config = new oidc.Configuration({ issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth` }, client.client_id, client.client_secret);
  oidc.allowInsecureRequests(config);
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: client.redirect_uri, scope, state: oidc.randomState(), code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
  const code = (await browser.authorize(url.href, client.redirect_uri)).searchParams.get('code')!;
  return tokenRequest(t, { client, form: { grant_type: 'authorization_code', code, redirect_uri: client.redirect_uri, code_verifier: verifier } });
}
const refreshRequest = (client: CodeFlowClient, refreshToken: string) => tokenRequest(t, { client, form: { grant_type: 'refresh_token', refresh_token: refreshToken } });
const host = () => new URL(t.issuer).host;

describe('PostgreSQL without Redis: the token and its grant in one read', () => {
  it('runs without Redis, the artefacts in PostgreSQL, whose repository reads token and grant together', async () => {
    expect(t.redis).toBe(false);
    expect(typeof t.app.ctx.storage.oidc.findWithGrant).toBe('function');
  });

  it('code exchange, refresh and userinfo are served directly, as oidc-provider answers them', async () => {
    const scope = 'openid email offline_access';
    const a = await actor();
    const code = await viaProduct(a, await exchangeFor(basic, scope));
    await expectAlike(t, code, await viaStock(a, await exchangeFor(basic, scope)));

    const [mine, theirs] = [code.json.refresh_token as string, (await viaStock(a, await exchangeFor(basic, scope))).json.refresh_token as string];
    const refreshed = await viaProduct(a, refreshRequest(basic, mine));
    await expectAlike(t, refreshed, await viaStock(a, refreshRequest(basic, theirs)));
    expect((await storedRow(t, 'RefreshToken', mine))?.consumed).toBe(true);

    const info = await compareUserinfo(a, userinfoRequest(host(), refreshed.json.access_token));
    expect(info).toMatchObject({ direct: true, status: 200, json: { sub: user.id, email: user.email } });
  });

  it('a token whose grant is gone is refused as oidc-provider refuses it, on every path', async () => {
    const a = await actor();
    const issued = await viaProduct(a, await exchangeFor(basic, 'openid offline_access'));
    expect(issued).toMatchObject({ direct: true, res: { status: 200 } });
    const grantId = (await storedRow(t, 'AccessToken', issued.json.access_token))!.payload.grantId as string;
    await t.app.ctx.storage.oidc.destroy('default', 'Grant', grantId);

    const info = await compareUserinfo(a, userinfoRequest(host(), issued.json.access_token));
    expect(info).toMatchObject({ direct: false, status: 401 });
    const refused = await viaProduct(a, refreshRequest(basic, issued.json.refresh_token));
    expect(refused).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
  });

  it('a row whose indexed grant is not its payload\'s (altered in the database) is never served with the indexed one', async () => {
    const a = await actor();
    const one = await viaProduct(a, await exchangeFor(basic, 'openid offline_access'));
    // Another browser session: another grant of the same user and client (a session's sign-ins share one).
    const two = await viaProduct(a, await exchangeFor(basic, 'openid offline_access', new HttpSession(t.issuer, user)));
    const own = (await storedRow(t, 'AccessToken', one.json.access_token))!.payload.grantId as string;
    const live = (await storedRow(t, 'AccessToken', two.json.access_token))!.payload.grantId as string;
    expect(own).not.toBe(live);
    // The column the statement joins on names a live grant; the payload's own grant is gone.
    await t.sql("UPDATE oidc_payloads SET grant_id = ? WHERE model = 'AccessToken' AND id = ?", [live, one.json.access_token]);
    await t.app.ctx.storage.oidc.destroy('default', 'Grant', own);
    const info = await compareUserinfo(a, userinfoRequest(host(), one.json.access_token));
    expect(info).toMatchObject({ direct: false, status: 401 });
    // The other token, of the live grant, is still served.
    expect(await compareUserinfo(a, userinfoRequest(host(), two.json.access_token))).toMatchObject({ direct: true, status: 200 });
  });
});
