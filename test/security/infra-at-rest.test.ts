/**
 * Issue 12 item 10: refresh tokens and session ids were stored as plain keys, client-secret hashes
 * were unsalted SHA-256, the SQLite file was created 0644. Now: keyed hashes of the ids (the
 * service still works with the real values), HMAC-SHA-256 secret hashes (old ones still verify),
 * and an owner-only database file. The Redis side: infra-at-rest-redis.test.ts.
 */
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, codeFlow } from '../../bench/flows.js';
import { BOOTSTRAP_ID, startTestApp, type TestApp } from '../helpers/app.js';
import { createClient, createUser } from '../helpers/users.js';

const REDIRECT = 'https://rp.example/cb';

describe('bearer values and secrets at rest (SQLite)', () => {
  let t: TestApp;
  let rp: { client_id: string; client_secret: string; redirect_uri: string };
  let session: BrowserSession;
  let tokens: Record<string, unknown>;

  beforeAll(async () => {
    t = await startTestApp();
    const c = await createClient(t, { client_name: 'rp', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: 'openid offline_access', first_party: true });
    rp = { client_id: c.client_id, client_secret: c.client_secret, redirect_uri: REDIRECT };
    const user = await createUser(t);
    session = new BrowserSession(t.url);
    tokens = await codeFlow(session, rp, { login: user.email, password: user.password }, { scope: 'openid offline_access', params: { prompt: 'consent' } });
  });
  afterAll(async () => t?.close());

  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  const refresh = async (token: string) => {
    const res = await fetch(`${t.issuer}/token`, { method: 'POST', headers: { authorization: basic(rp.client_id, rp.client_secret), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }) });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };

  it('creates the database file owner-only', () => {
    const files = readdirSync(t.dir).filter((f) => f.startsWith('svc.db') && !f.endsWith('encryption-key'));
    expect(files).toContain('svc.db-wal');
    for (const f of files) expect((statSync(join(t.dir, f)).mode & 0o777).toString(8), f).toBe('600');
  });

  it('stores no refresh token or session id in the clear, and both still work', async () => {
    const refreshToken = String(tokens.refresh_token);
    const sessionId = session.jar.header().split('; ').find((c) => c.startsWith('_session='))!.split('=')[1]!;
    expect(sessionId.length).toBeGreaterThan(10);
    const rows = await t.sql("SELECT model, id, payload FROM oidc_payloads WHERE model IN ('RefreshToken', 'Session')");
    expect(rows.map((r) => r.model).sort()).toEqual(['RefreshToken', 'Session']);
    const dump = JSON.stringify(await t.sql('SELECT * FROM oidc_payloads'));
    expect(dump).not.toContain(refreshToken);
    expect(dump).not.toContain(sessionId);
    // A session under the keyed hash alone; a refresh token under its value's time prefix (8
    // characters of a millisecond clock) and the keyed hash, none of the 210 random bits after it.
    for (const r of rows) expect(String(r.id)).toMatch(r.model === 'Session' ? /^h1\./ : /^h2\./);
    expect(String(rows.find((r) => r.model === 'RefreshToken')!.id).slice(3, 11)).toBe(refreshToken.slice(0, 8));
    expect(dump).not.toContain(refreshToken.slice(8));
    // A refresh token is only ever found by its value: its row keeps no copy of it, not even sealed.
    // A session is also found by uid, so its value is kept, sealed.
    const payloadOf = (model: string) => JSON.parse(String(rows.find((r) => r.model === model)!.payload)) as Record<string, unknown>;
    expect(payloadOf('RefreshToken')).not.toHaveProperty('jti');
    expect(payloadOf('RefreshToken')).not.toHaveProperty('jti_sealed');
    expect(payloadOf('Session')).not.toHaveProperty('jti');
    expect(payloadOf('Session').jti_sealed).toMatch(/^v1\./);

    // The service itself still finds them: the session signs in silently, the refresh token refreshes.
    const q = new URLSearchParams({ client_id: rp.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', prompt: 'none', state: 'x', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
    const silent = await session.follow(`${t.issuer}/auth?${q}`, REDIRECT);
    expect('callback' in silent && silent.callback.get('code')).toEqual(expect.any(String));
    const refreshed = await refresh(refreshToken);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    // The stored hash is not a usable token.
    const stored = String(rows.find((r) => r.model === 'RefreshToken')!.id);
    expect((await refresh(stored)).body.error).toBe('invalid_grant');

    // A refresh token stored by an earlier version, with its value sealed beside it, still refreshes.
    const next = String(refreshed.body.refresh_token);
    await t.sql("UPDATE oidc_payloads SET payload = json_set(payload, '$.jti_sealed', 'v1.AAAA.AAAA.AAAA') WHERE model = 'RefreshToken' AND consumed_at IS NULL");
    const [legacyRow] = await t.sql("SELECT payload FROM oidc_payloads WHERE model = 'RefreshToken' AND consumed_at IS NULL");
    expect(String(legacyRow!.payload)).toContain('jti_sealed');
    const again = await refresh(next);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  });

  it('hashes client secrets with HMAC-SHA-256 under a server key; old SHA-256 hashes still verify', async () => {
    const [row] = await t.sql('SELECT secret_hash FROM clients WHERE client_id = ?', [rp.client_id]);
    const stored = String(row!.secret_hash);
    expect(stored).toMatch(/^\$hmac256\$/);
    expect(stored).not.toContain(createHash('sha256').update(rp.client_secret).digest('base64url'));
    const [boot] = await t.sql('SELECT secret_hash FROM clients WHERE client_id = ?', [BOOTSTRAP_ID]);
    expect(String(boot!.secret_hash)).toMatch(/^\$hmac256\$/);

    // A client whose hash was written by an older version (unkeyed SHA-256) still authenticates.
    const legacy = await createClient(t, { client_name: 'legacy', grant_types: ['client_credentials'], scope: 'openid' });
    await t.sql('UPDATE clients SET secret_hash = ? WHERE client_id = ?', [`$sha256$${createHash('sha256').update(legacy.client_secret).digest('base64url')}`, legacy.client_id]);
    t.app.ctx.tenantStates.invalidateClient('default', legacy.client_id);
    const res = await fetch(`${t.issuer}/token`, { method: 'POST', headers: { authorization: basic(legacy.client_id, legacy.client_secret), 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&scope=openid' });
    expect(res.status, await res.clone().text()).toBe(200);
    const wrong = await fetch(`${t.issuer}/token`, { method: 'POST', headers: { authorization: basic(legacy.client_id, 'wrong'), 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&scope=openid' });
    expect(wrong.status).toBe(401);
  });
});
