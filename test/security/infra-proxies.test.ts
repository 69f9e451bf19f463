/**
 * Issue 12 item 7: forwarded headers count only from HTTP_TRUSTED_PROXIES (default none),
 * everywhere (per-IP limits, audit ip_address, oidc-provider through the bridge); per-IP sign-in
 * counters are the app's (they outlive actors; Redis-shared: infra-attempts-redis.test.ts); the
 * Argon2 queue admits fairly per source (429 to the source over its share, not 503 to everyone).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, openLoginForm, type LoginForm } from '../../bench/flows.js';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { clientIpResolver } from '../../src/http/client-ip.js';
import { runNodeCallback } from '../../src/http/koa-bridge.js';
import type { HttpRequest } from '../../src/http/types.js';
import { LoginGuard } from '../../src/oidc/login-guard.js';
import { FairAdmission } from '../../src/workers/fair-admission.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';
import { createClient, createUser } from '../helpers/users.js';

describe('client address behind proxies', () => {
  it('ignores X-Forwarded-For unless the peer is a trusted proxy', () => {
    const none = clientIpResolver([]);
    expect(none('203.0.113.9', { 'x-forwarded-for': '6.6.6.6' })).toBe('203.0.113.9');
    const ip = clientIpResolver(['10.0.0.0/8', '2001:db8::/32']);
    expect(ip('203.0.113.9', { 'x-forwarded-for': '6.6.6.6' })).toBe('203.0.113.9');
    expect(ip('10.1.1.1', { 'x-forwarded-for': '6.6.6.6' })).toBe('6.6.6.6');
    expect(ip('10.1.1.1', {})).toBe('10.1.1.1');
    // Read from the right: what the client wrote on the left does not count.
    expect(ip('10.1.1.1', { 'x-forwarded-for': '1.2.3.4, 6.6.6.6, 10.0.0.7' })).toBe('6.6.6.6');
    expect(ip('2001:db8::1', { 'x-forwarded-for': '[2001:db8::5]:443, 198.51.100.1:8080' })).toBe('198.51.100.1');
    expect(ip('10.1.1.1', { 'x-forwarded-for': 'not-an-ip, 10.0.0.9' })).toBe('10.0.0.9');
    expect(ip('10.1.1.1', { 'x-forwarded-for': '::ffff:6.6.6.6' })).toBe('6.6.6.6');
  });

  it('hands oidc-provider the computed client address, never the X-Forwarded-For a client sent', async () => {
    const req = { id: 'r', method: 'GET', path: '/oidc/v1/x', rawQuery: '', headers: { 'x-forwarded-for': '6.6.6.6' }, ip: '203.0.113.9', body: Buffer.alloc(0), params: {} } as HttpRequest;
    const seen = await runNodeCallback(
      (nreq, nres) => (nres as unknown as { end(s: string): void }).end(String((nreq as unknown as { headers: Record<string, string> }).headers['x-forwarded-for'])),
      req,
      { mountPath: '/oidc/v1', origin: new URL('http://localhost') },
    );
    expect(String(seen.body)).toBe('203.0.113.9');
  });

  it('refuses a malformed HTTP_TRUSTED_PROXIES at start', () => {
    expect(loadConfig({ HTTP_TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1' }).http.trusted_proxies).toEqual(['10.0.0.0/8', '127.0.0.1']);
    expect(loadConfig({}).http.trusted_proxies).toEqual([]);
    expect(() => loadConfig({ HTTP_TRUSTED_PROXIES: '10.0.0.0/8,proxy.example' })).toThrow(ConfigError);
    expect(() => loadConfig({ HTTP_TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/HTTP_TRUSTED_PROXIES/);
  });
});

describe('fair admission to the Argon2 pool', () => {
  it('serves sources in turn and refuses the heaviest source when the waiting room is full', async () => {
    const fair = new FairAdmission(1, 3);
    const granted: string[] = [];
    const outcomes: Array<Promise<string>> = [];
    const ask = (source: string, label: string) => {
      outcomes.push(fair.acquire(source).then(() => { granted.push(label); return `${label} ok`; }, (err: Error) => `${label} ${err.name}`));
    };
    ask('A', 'a1'); // runs
    ask('A', 'a2');
    ask('A', 'a3');
    ask('A', 'a4'); // waiting room full
    ask('A', 'a5'); // its own address holds the most: 503
    ask('B', 'b1'); // takes a4's place: A gets 429
    await new Promise((r) => setImmediate(r));
    fair.release('A'); // a1 done: A's turn (a2)
    await new Promise((r) => setImmediate(r));
    fair.release('A'); // a2 done: B's turn, not a3
    await new Promise((r) => setImmediate(r));
    expect(granted).toEqual(['a1', 'a2', 'b1']);
    fair.release('B');
    expect(await Promise.all(outcomes)).toEqual(['a1 ok', 'a2 ok', 'a3 ok', 'a4 SourceOverShare', 'a5 Unavailable', 'b1 ok']);
  });
});

describe('through the service', () => {
  const signIn = async (t: TestApp): Promise<LoginForm> => {
    const rp = await createClient(t, { client_name: 'rp', redirect_uris: ['https://rp.example/cb'], grant_types: ['authorization_code'], response_types: ['code'], scope: 'openid', first_party: true });
    const user = await createUser(t);
    const form = await openLoginForm(new BrowserSession(t.url), { client_id: rp.client_id, client_secret: rp.client_secret, redirect_uri: 'https://rp.example/cb' }, { login: user.email, password: 'wrong-password-123' }, { scope: 'openid' });
    return form;
  };
  const post = async (form: LoginForm, xff?: string) =>
    (await fetch(form.url, { method: 'POST', headers: { cookie: form.cookie, 'content-type': 'application/x-www-form-urlencoded', ...(xff ? { 'x-forwarded-for': xff } : {}) }, body: form.body, redirect: 'manual' })).status;
  const auditIp = async (t: TestApp, clientName: string) => {
    const list = await t.app.ctx.storage.audit.list('default', { type: 'client.created' }, { limit: 50, include_count: false });
    return list.items.find((e) => JSON.stringify(e.details).includes(clientName))?.ip_address;
  };

  describe('no trusted proxies (default)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '3', SECURITY_LOGIN_MAX_FAILED_ATTEMPTS: '100' });
    });
    afterAll(async () => t?.close());

    it('audits the peer address, not a forged X-Forwarded-For', async () => {
      const admin = await t.token('svc:clients:write');
      const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'forged-xff', redirect_uris: ['https://rp.example/cb'] }, headers: { 'x-forwarded-for': '6.6.6.6' } });
      expect(res.status, res.text).toBe(201);
      expect(await auditIp(t, 'forged-xff')).toBe('127.0.0.1');
    });

    it('counts sign-in attempts per peer whatever X-Forwarded-For says, across actors', async () => {
      await awayFromWindowEdge(60);
      const form = await signIn(t);
      expect(await post(form, '1.1.1.1')).toBe(401);
      expect(await post(form, '2.2.2.2')).toBe(401);
      expect(await post(form, '3.3.3.3')).toBe(401);
      // A new guard (as a new actor after eviction builds) sees the same count: the fourth is over.
      expect(await new LoginGuard(t.app.ctx, () => t.app.ctx.config as never).allowIp('default', '127.0.0.1')).toBe(false);
      expect(await post(form, '4.4.4.4')).toBe(429);
    });
  });

  describe('behind a trusted proxy', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ HTTP_TRUSTED_PROXIES: '127.0.0.0/8', SECURITY_LOGIN_PER_IP_PER_MINUTE: '2', SECURITY_LOGIN_MAX_FAILED_ATTEMPTS: '100' });
    });
    afterAll(async () => t?.close());

    it('audits the forwarded client address (rightmost untrusted hop)', async () => {
      const admin = await t.token('svc:clients:write');
      const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'real-xff', redirect_uris: ['https://rp.example/cb'] }, headers: { 'x-forwarded-for': '9.9.9.9, 6.6.6.6' } });
      expect(res.status, res.text).toBe(201);
      expect(await auditIp(t, 'real-xff')).toBe('6.6.6.6');
    });

    it('limits one client without locking out the others behind the same proxy', async () => {
      await awayFromWindowEdge(60);
      const form = await signIn(t);
      expect(await post(form, '6.6.6.6')).toBe(401);
      expect(await post(form, '6.6.6.6')).toBe(401);
      expect(await post(form, '6.6.6.6')).toBe(429);
      expect(await post(form, '7.7.7.7')).toBe(401);
    });
  });
});
