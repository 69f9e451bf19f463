/**
 * Failed client authentication is audited (spec 1.6 "failed authentication attempts"; fifth
 * session follow-up): `client_auth_failed` for a client of the tenant (wrong secret, bad assertion,
 * method mismatch, deactivated client) on every throttled endpoint, through oidc-provider and the
 * actor's direct paths alike; one `client_auth_throttled` when the throttle starts refusing; nothing
 * for the refused requests, for unknown client ids (a warn log line instead) or for successes. The
 * presented secret or assertion never appears in an entry.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { afterAnswerSettled } from '../../src/http/after-answer.js';
import { CLIENT_FAILURES_PER_SOURCE } from '../../src/oidc/auth-throttle.js';
import type { AuditEntry } from '../../src/storage/types.js';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, api, startTestApp, type TestApp } from '../helpers/app.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';
import { createClient } from '../helpers/users.js';

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

describe('failed client authentication in the audit log', () => {
  let t: TestApp;
  let auditToken: string;
  let client: Record<string, any>;
  let ipCounter = 0;
  /** A fresh client address per test: the throttle counts per client and address. */
  const freshIp = () => `198.18.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`;

  beforeAll(async () => {
    t = await startTestApp({ HTTP_TRUSTED_PROXIES: '127.0.0.0/8' });
    auditToken = await t.token('svc:audit:read');
    client = await createClient(t, { client_name: 'audited', grant_types: ['client_credentials'], scope: 'openid' });
  });
  afterAll(async () => t?.close());

  /** Every entry written after the answers so far, once written. */
  const settled = async () => {
    await afterAnswerSettled();
    await t.app.ctx.audit.drain();
  };
  const entries = async (query: Record<string, string>): Promise<AuditEntry[]> => {
    await settled();
    const res = await api(t, 'GET', `/api/v1/audit?${new URLSearchParams({ limit: '100', ...query })}`, { token: auditToken });
    expect(res.status, res.text).toBe(200);
    return res.json.data as AuditEntry[];
  };

  const post = async (path: string, body: Record<string, string>, ip: string, authorization?: string) => {
    const res = await fetch(`${t.url}/oidc/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': FORM, 'x-forwarded-for': ip, 'user-agent': 'audit-test', ...(authorization ? { authorization } : {}) },
      body: new URLSearchParams(body),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text() };
  };

  it('a wrong Basic secret at the token endpoint (oidc-provider) is one client_auth_failed entry, without the secret', async () => {
    const ip = freshIp();
    const secret = `wrong-secret-${randomUUID()}`;
    const res = await post('/token', { grant_type: 'client_credentials', scope: 'openid' }, ip, basic(client.client_id, secret));
    expect(res.status).toBe(401);
    const found = await entries({ type: 'client_auth_failed', ip_address: ip });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      type: 'client_auth_failed',
      status: 'failed',
      client_id: client.client_id,
      ip_address: ip,
      user_agent: 'audit-test',
      user_id: null,
      details: { client_id: client.client_id, endpoint: 'token', reason: 'wrong_secret' },
    });
    expect(JSON.stringify(found[0])).not.toContain(secret);
  });

  it("a wrong secret on the actor's direct path (a Management API token) and at introspection (both paths) is audited too", async () => {
    const ip = freshIp();
    const secret = `direct-wrong-${randomUUID()}`;
    const auth = basic(client.client_id, secret);
    expect((await post('/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }, ip, auth)).status).toBe(401);
    // An opaque unknown token goes to oidc-provider; a JWT is introspected by the actor.
    expect((await post('/token/introspection', { token: 'opaque-token-value' }, ip, auth)).status).toBe(401);
    const jwt = await t.token('svc:clients:read');
    expect((await post('/token/introspection', { token: jwt }, ip, auth)).status).toBe(401);
    // Revocation (oidc-provider only).
    expect((await post('/token/revocation', { token: 'whatever' }, ip, auth)).status).toBe(401);
    const found = await entries({ type: 'client_auth_failed', ip_address: ip });
    expect(found.map((e) => e.details.endpoint).sort()).toEqual(['introspection', 'introspection', 'revocation', 'token']);
    for (const e of found) {
      expect(e.details.reason).toBe('wrong_secret');
      expect(e.client_id).toBe(client.client_id);
      expect(JSON.stringify(e)).not.toContain(secret);
      expect(JSON.stringify(e)).not.toContain(jwt);
    }
  });

  it('names a bad client assertion and a method mismatch, never the assertion itself', async () => {
    const jwtClient = await createClient(t, { client_name: 'hs256', grant_types: ['client_credentials'], scope: 'openid', token_endpoint_auth_method: 'client_secret_jwt' });
    const assertion = async (key: string) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: jwtClient.client_id, sub: jwtClient.client_id, aud: t.issuer, iat: now, exp: now + 60, jti: randomUUID() })
        .setProtectedHeader({ alg: 'HS256' })
        .sign(new TextEncoder().encode(key));
    };
    const ip = freshIp();
    const bad = await assertion(`not-the-secret-${randomUUID()}`);
    // oidc-provider's path (scope openid) and the direct one (Management API).
    expect((await post('/token', { grant_type: 'client_credentials', scope: 'openid', client_assertion_type: ASSERTION_TYPE, client_assertion: bad }, ip)).status).toBe(401);
    const bad2 = await assertion(`not-the-secret-${randomUUID()}`);
    expect((await post('/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read', client_assertion_type: ASSERTION_TYPE, client_assertion: bad2 }, ip)).status).toBe(401);
    // Its own secret sent as a Basic secret: not the registered method.
    expect((await post('/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }, ip, basic(jwtClient.client_id, jwtClient.client_secret))).status).toBe(401);
    expect((await post('/token', { grant_type: 'client_credentials', scope: 'openid' }, ip, basic(jwtClient.client_id, jwtClient.client_secret))).status).toBe(401);

    const found = await entries({ type: 'client_auth_failed', ip_address: ip });
    expect(found.map((e) => e.details.reason).sort()).toEqual(['invalid_assertion', 'invalid_assertion', 'method_mismatch', 'method_mismatch']);
    for (const e of found) {
      expect(e.client_id).toBe(jwtClient.client_id);
      const text = JSON.stringify(e);
      for (const secretish of [bad, bad2, bad.split('.')[2]!, bad2.split('.')[2]!, jwtClient.client_secret]) expect(text).not.toContain(secretish);
    }
  });

  it('a deactivated client is audited (client_inactive); an unknown client id is not, and is logged at warn once a minute', async () => {
    const gone = await createClient(t, { client_name: 'deactivated', grant_types: ['client_credentials'], scope: 'openid' });
    const admin = await t.token('svc:clients:write');
    expect((await api(t, 'POST', `/api/v1/clients/${gone.client_id}/deactivate`, { token: admin })).status).toBe(200);
    const ip = freshIp();
    expect((await post('/token', { grant_type: 'client_credentials', scope: 'openid' }, ip, basic(gone.client_id, gone.client_secret))).status).toBe(401);
    expect((await post('/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }, ip, basic(gone.client_id, gone.client_secret))).status).toBe(401);
    const inactive = await entries({ type: 'client_auth_failed', ip_address: ip });
    expect(inactive.map((e) => [e.client_id, e.details.reason, e.details.endpoint]).sort()).toEqual([
      [gone.client_id, 'client_inactive', 'token'],
      [gone.client_id, 'client_inactive', 'token'],
    ]);

    const warn = vi.spyOn(t.app.ctx.log, 'warn');
    try {
      const other = freshIp();
      const first = `no-such-client-${randomUUID()}`;
      for (let i = 0; i < 5; i++) {
        const unknown = i ? `no-such-client-${randomUUID()}` : first;
        const path = i % 2 ? '/token' : '/token/introspection';
        const body: Record<string, string> = i % 2 ? { grant_type: 'client_credentials', scope: 'openid' } : { token: 'opaque' };
        expect((await post(path, body, other, basic(unknown, 'whatever-secret'))).status).toBe(401);
      }
      await settled();
      expect(await entries({ ip_address: other })).toEqual([]);
      // The first of the minute at once; the others are counted into one line at the minute's end
      // (test/oidc/client-auth-audit.test.ts). This app had no failure of an unknown client before.
      const lines = warn.mock.calls.filter((c) => typeof c[1] === 'string' && c[1].startsWith('client authentication failed'));
      expect(lines).toHaveLength(1);
      expect(lines[0]![0]).toMatchObject({ tenant: 'default', client_id: first, ip: other, reason: 'unknown_client' });
    } finally {
      warn.mockRestore();
    }
  });

  it('21 wrong secrets in a row: 20 entries and one client_auth_throttled; the refused requests write nothing', async () => {
    const throttled = await createClient(t, { client_name: 'throttled', grant_types: ['client_credentials'], scope: 'openid' });
    await awayFromWindowEdge(60);
    const ip = freshIp();
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) {
      const path = i % 2 ? '/token' : '/token/introspection';
      const body: Record<string, string> = i % 2 ? { grant_type: 'client_credentials', scope: 'openid' } : { token: 'opaque' };
      expect((await post(path, body, ip, basic(throttled.client_id, `wrong-${i}`))).status).toBe(401);
    }
    const refused = await post('/token', { grant_type: 'client_credentials', scope: 'openid' }, ip, basic(throttled.client_id, 'wrong-21'));
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('60');
    const right = await post('/token', { grant_type: 'client_credentials', scope: 'openid' }, ip, basic(throttled.client_id, throttled.client_secret));
    expect(right.status).toBe(429);
    for (let i = 0; i < 5; i++) expect((await post('/token', { grant_type: 'client_credentials', scope: 'openid' }, ip, basic(throttled.client_id, `more-${i}`))).status).toBe(429);

    const failed = await entries({ type: 'client_auth_failed', ip_address: ip });
    expect(failed).toHaveLength(CLIENT_FAILURES_PER_SOURCE);
    expect(new Set(failed.map((e) => e.client_id))).toEqual(new Set([throttled.client_id]));
    const stops = await entries({ type: 'client_auth_throttled', ip_address: ip });
    expect(stops).toHaveLength(1);
    expect(stops[0]).toMatchObject({
      status: 'warning',
      client_id: throttled.client_id,
      ip_address: ip,
      details: { client_id: throttled.client_id, scope: 'client_and_address', failures: CLIENT_FAILURES_PER_SOURCE, retry_after: 60 },
    });
    const types = await api(t, 'GET', '/api/v1/audit/types', { token: auditToken });
    expect(types.json.data).toEqual(expect.arrayContaining(['client_auth_failed', 'client_auth_throttled']));
  });

  it('a successful client authentication writes nothing', async () => {
    const ip = freshIp();
    expect((await post('/token', { grant_type: 'client_credentials', scope: 'openid' }, ip, basic(client.client_id, client.client_secret))).status).toBe(200);
    expect((await post('/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }, ip, basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET))).status).toBe(200);
    expect((await post('/token/introspection', { token: 'opaque' }, ip, basic(client.client_id, client.client_secret))).status).toBe(200);
    expect(await entries({ ip_address: ip })).toEqual([]);
  });
});
