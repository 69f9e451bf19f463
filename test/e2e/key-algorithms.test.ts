/**
 * `security.key_store` settings changed between two starts of the service (spec 1.6, 5.7;
 * docs/signing-keys.md), on both backends:
 *
 * - an algorithm removed from SECURITY_KEY_STORE_ALGORITHMS: its keys stop signing at the restart
 *   and are `expiring` (listed so, published, verifying the tokens they signed) for one overlap
 *   window, then retired; a client registered with that ID token algorithm is refused with a
 *   reason and named in the log; a client without one signs in with the remaining algorithm;
 * - token lifetimes longer than the overlap window: a warning at start-up and for a tenant's own
 *   override (which is stored all the same);
 * - the algorithms cannot be set through the configuration API.
 */
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { api, restartTestApp, startTestApp, BOOTSTRAP_SECRET, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, loopbackFetch } from '../helpers/code-flow.js';
import { captureLog } from '../helpers/log.js';
import { postForm } from '../helpers/oauth.js';
import { until } from '../helpers/until.js';
import { createUser } from '../helpers/users.js';

const REDIRECT = 'http://127.0.0.1:65530/cb';
const OVERLAP = 8;

interface Key {
  kid: string;
  alg: string;
  status: string;
  promoted: boolean;
  rotatedAt: string | null;
}

const listKeys = async (t: TestApp, token: string, status?: string): Promise<Key[]> => {
  const res = await api(t, 'GET', `/api/v1/jwks${status ? `?status=${status}` : ''}`, { token });
  expect(res.status, res.text).toBe(200);
  return res.json.data as Key[];
};
const publishedKids = async (t: TestApp): Promise<string[]> =>
  ((await (await fetch(`${t.url}/oidc/v1/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid).sort();

describe('an algorithm removed from SECURITY_KEY_STORE_ALGORITHMS at a restart', () => {
  let first: TestApp | undefined;
  let second: TestApp | undefined;
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('stops signing with it at once, keeps its tokens valid for the overlap window, then retires its keys', async () => {
    const a = (first = await startTestApp());
    const reader = 'svc:jwks:read svc:stats:read svc:audit:read';
    const rsToken = await a.token(reader);
    expect(decodeProtectedHeader(rsToken).alg).toBe('RS256');
    const before = await listKeys(a, rsToken);
    const kidOf = (alg: string) => before.find((k) => k.alg === alg)!.kid;
    const admin = await a.token('svc:clients:write svc:users:write');
    const user = await createUser(a, { email_verified: true });
    const pinned = await codeFlowClient(a, admin, REDIRECT, { id_token_signed_response_alg: 'RS256' });
    const unnamed = await codeFlowClient(a, admin, REDIRECT);
    const pinnedTokens = await new HttpSession(a.issuer, user).tokens(pinned, { scope: 'openid offline_access', idTokenAlg: 'RS256' });

    await a.app.close();
    const captured = captureLog();
    const b = (second = await restartTestApp(a, { SECURITY_KEY_STORE_ALGORITHMS: 'ES256', SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS: String(OVERLAP) }, { log: captured.log }));

    // Inside the window: RS256 and EdDSA are expiring (not promoted), ES256 is the same key as before.
    const after = await listKeys(b, rsToken);
    expect(after.map((k) => k.kid).sort()).toEqual(before.map((k) => k.kid).sort());
    for (const alg of ['RS256', 'EdDSA']) expect(after.find((k) => k.alg === alg)).toMatchObject({ status: 'expiring', promoted: false, rotatedAt: expect.any(String) });
    expect(after.find((k) => k.alg === 'ES256')).toMatchObject({ kid: kidOf('ES256'), status: 'active', promoted: true, rotatedAt: null });
    // Published while they verify: the RS256 token works, for the API and against the served JWKS.
    expect(await publishedKids(b)).toEqual(before.map((k) => k.kid).sort());
    await jwtVerify(rsToken, createRemoteJWKSet(new URL(`${b.url}/oidc/v1/jwks`)), { issuer: b.issuer, typ: 'at+jwt' });
    const newToken = await b.token(reader);
    expect(decodeProtectedHeader(newToken)).toMatchObject({ alg: 'ES256', kid: kidOf('ES256') });
    const discovery = await (await fetch(`${b.url}/oidc/v1/.well-known/openid-configuration`)).json();
    expect(discovery.id_token_signing_alg_values_supported).toEqual(['ES256']);
    const health = await api(b, 'GET', '/api/v1/stats/health', { token: rsToken });
    expect(health.status, health.text).toBe(200);
    expect(health.json.data).toMatchObject({ status: 'healthy', checks: b.healthChecks });

    // Said and recorded once.
    const demotion = captured.warnings().filter((l) => l.setting === 'SECURITY_KEY_STORE_ALGORITHMS' && l.kids);
    expect(demotion).toEqual([expect.objectContaining({ tenant: 'default', algorithms: ['EdDSA', 'RS256'], kids: expect.arrayContaining([kidOf('RS256'), kidOf('EdDSA')]) })]);
    const audit = await api(b, 'GET', '/api/v1/audit?type=jwks.demoted', { token: newToken });
    expect(audit.json.data).toHaveLength(1);
    expect(audit.json.data[0]).toMatchObject({ type: 'jwks.demoted', status: 'success', details: { trigger: 'algorithms', algorithms: ['EdDSA', 'RS256'] } });

    // A client registered for RS256 ID tokens is refused with the reason, never served another
    // algorithm, and the log names it; a client that named none gets ES256 ID tokens.
    const refreshed = await postForm(b, '/token', { grant_type: 'refresh_token', refresh_token: pinnedTokens.refresh_token! }, { id: pinned.client_id, secret: pinned.client_secret! });
    expect(refreshed.status).toBe(400);
    expect(refreshed.json).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('id_token_signed_response_alg') });
    expect(captured.warnings().filter((l) => l.client_id === pinned.client_id)).toEqual([
      expect.objectContaining({ tenant: 'default', id_token_signed_response_alg: 'RS256', msg: expect.stringContaining('change the client') }),
    ]);
    // The fix the warning names: the client moves to a configured algorithm.
    const changed = await api(b, 'PATCH', `/api/v1/clients/${pinned.client_id}`, { token: await b.token('svc:clients:write'), body: { id_token_signed_response_alg: 'ES256' } });
    expect(changed.status, changed.text).toBe(200);
    const again = await postForm(b, '/token', { grant_type: 'refresh_token', refresh_token: pinnedTokens.refresh_token! }, { id: pinned.client_id, secret: pinned.client_secret! });
    expect(again.status, JSON.stringify(again.json)).toBe(200);
    expect(decodeProtectedHeader(again.json.id_token).alg).toBe('ES256');
    const atB = new HttpSession(b.issuer, user, loopbackFetch(b.app.port));
    const unnamedTokens = await atB.tokens(unnamed, { scope: 'openid', idTokenAlg: 'ES256' });
    expect(decodeProtectedHeader(unnamedTokens.id_token!).alg).toBe('ES256');

    // The window ends: the keys are retired without a rotation, leave the JWKS, and the RS256 token stops working.
    await until(async () => (await publishedKids(b)).length === 1, (OVERLAP + 6) * 1000);
    expect(await publishedKids(b)).toEqual([kidOf('ES256')]);
    expect((await api(b, 'GET', '/api/v1/jwks', { token: rsToken })).status).toBe(401);
    expect((await listKeys(b, newToken, 'retired')).map((k) => k.kid).sort()).toEqual([kidOf('RS256'), kidOf('EdDSA')].sort());
    expect(JSON.stringify(captured.lines)).not.toContain(BOOTSTRAP_SECRET);
  });
});

describe('token lifetimes longer than the overlap window', () => {
  let t: TestApp | undefined;
  afterAll(async () => t?.close());

  it('are named in a warning at start-up and when a tenant overrides one; the override is stored all the same', async () => {
    const captured = captureLog();
    t = await startTestApp({ OIDC_TTL_ACCESS_TOKEN: '86400' }, { log: captured.log });
    const lifetimes = () => captured.warnings().filter((l) => typeof l.setting === 'string' && /TTL|ttl/.test(l.setting));
    expect(lifetimes()).toEqual([
      expect.objectContaining({
        setting: 'OIDC_TTL_ACCESS_TOKEN',
        seconds: 86400,
        overlap_window_seconds: 7200,
        msg: 'OIDC_TTL_ACCESS_TOKEN (86400 s) is longer than SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS (7200 s): a token signed just before a key rotation stops verifying up to 79200 s before it expires; set the overlap window to at least 86400 s or shorten the lifetime',
      }),
    ]);

    const admin = await t.token('svc:config:read svc:config:write');
    const res = await api(t, 'PUT', '/api/v1/config/oidc', { token: admin, body: { ttl: { id_token: 9000, refresh_token: 7776000 } } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.oidc).toEqual({ ttl: { id_token: 9000, refresh_token: 7776000 } });
    // Applied before the answer, and said then: only the tenant's own lifetime (refresh tokens are not signed).
    expect(lifetimes().slice(1)).toEqual([expect.objectContaining({ tenant: 'default', setting: 'oidc.ttl.id_token', seconds: 9000, overlap_window_seconds: 7200 })]);

    // The algorithms are the platform's: no configuration API sets them.
    const refused = await api(t, 'PUT', '/api/v1/config/security', { token: admin, body: { key_store: { algorithms: ['RS256', 'RS256'] } } });
    expect(refused.status).toBe(422);
    expect(refused.json.errors.map((e: { field: string }) => e.field)).toEqual(['key_store']);
  });

  it('are not mentioned when they fit in the window', async () => {
    const captured = captureLog();
    const quiet = await startTestApp({ OIDC_TTL_ACCESS_TOKEN: '7200', OIDC_TTL_ID_TOKEN: '600' }, { log: captured.log });
    try {
      expect(captured.warnings().filter((l) => /OVERLAP/.test(String(l.msg)))).toEqual([]);
    } finally {
      await quiet.close();
    }
  });
});
