/**
 * The client-authentication throttle (src/oidc/auth-throttle.ts) with its counters in Redis, as
 * several instances share them: 429 past the limit, whatever instance counted the failures; and a
 * client under both limits is not counted again on every request (issue 17: an MGET before every
 * token request) until a failure of that client is heard of, here or from another instance over the
 * event bus (clear-pairs.ts); that knowledge is per tenant, and the app's (an evicted actor's
 * successor keeps it).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { attemptCounter } from '../../src/oidc/attempt-counter.js';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';
import { AuthThrottle, CLIENT_FAILURES_PER_SOURCE, clearPairsOf } from '../../src/oidc/auth-throttle.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { createClient } from '../helpers/users.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('client authentication throttle on Redis', () => {
  let t: TestApp;
  /** A second instance on the same Redis (its own database: a failure there needs no client of its own). */
  let other: TestApp;
  let client: Record<string, any>;
  beforeAll(async () => {
    // Behind a trusted proxy on loopback, so the tests can speak for several client addresses.
    const shared = { STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: uniquePrefix('throttle'), HTTP_TRUSTED_PROXIES: '127.0.0.0/8' };
    t = await startTestApp(shared);
    other = await startTestApp(shared);
    client = await createClient(t, { client_name: 'svc', grant_types: ['client_credentials'], scope: 'openid' });
  });
  afterAll(async () => {
    await other?.close();
    await t?.close();
  });
  afterEach(() => vi.restoreAllMocks());

  const token = async (secret: string, ip: string, at: TestApp = t) => {
    const res = await fetch(`${at.url}/oidc/v1/token`, {
      method: 'POST',
      headers: { authorization: basic(client.client_id, secret), 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
      body: 'grant_type=client_credentials&scope=openid',
    });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };
  const counter = () => attemptCounter(t.app.ctx);
  /** Failures another instance counted for this client and address (the shared counts, not this instance's). */
  const failuresElsewhere = async (ip: string, n: number) => {
    for (let i = 0; i < n; i++) await counter().hit('default', 'client-auth-ip', `${client.client_id}\u0000${ip}`, 60);
  };

  it('runs with its counters in Redis', () => {
    expect(t.redis).toBe(true);
    expect(counter().peekNow).toBeUndefined();
  });

  it('answers 429 to an address that keeps failing, and then even to the right secret', async () => {
    await awayFromWindowEdge(60);
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) expect((await token(`wrong-${i}`, '6.6.6.1')).status).toBe(401);
    expect((await token('wrong-x', '6.6.6.1')).status).toBe(429);
    expect((await token(client.client_secret, '6.6.6.1')).status).toBe(429);
    expect((await token(client.client_secret, '203.0.113.1')).status).toBe(200);
  });

  it('a client under the limits is counted once, not on every request, while it keeps succeeding', async () => {
    const peek = vi.spyOn(counter(), 'peekMany');
    for (let i = 0; i < 5; i++) expect((await token(client.client_secret, '203.0.113.2')).status).toBe(200);
    expect(peek).toHaveBeenCalledTimes(1);
    // Another address is its own pair: counted.
    expect((await token(client.client_secret, '203.0.113.3')).status).toBe(200);
    expect(peek).toHaveBeenCalledTimes(2);
  });

  it('failures counted elsewhere stop an address at its first failure here', async () => {
    await awayFromWindowEdge(60);
    expect((await token(client.client_secret, '6.6.6.2')).status).toBe(200);
    await failuresElsewhere('6.6.6.2', CLIENT_FAILURES_PER_SOURCE);
    // Known under the limits a moment ago: one more attempt is answered, and its failure is counted.
    expect((await token('wrong', '6.6.6.2')).status).toBe(401);
    // That failure made this instance count again: the shared count is over the limit.
    expect((await token('wrong', '6.6.6.2')).status).toBe(429);
    expect((await token(client.client_secret, '6.6.6.2')).status).toBe(429);

  });

  it('failures at another instance stop an address here at once, however long it has been known clear', async () => {
    await awayFromWindowEdge(60);
    const peek = vi.spyOn(counter(), 'peekMany');
    expect((await token(client.client_secret, '6.6.6.3')).status).toBe(200);
    expect((await token(client.client_secret, '6.6.6.3')).status).toBe(200);
    expect(peek).toHaveBeenCalledTimes(1); // known clear
    // The other instance answers the wrong secrets (and counts them in the shared counters).
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) expect((await token(`wrong-${i}`, '6.6.6.3', other)).status).toBe(401);
    // Its announcement reaches this instance: the pair is counted again, and is over the limit.
    await expect.poll(() => clearPairsOf(t.app.ctx).isClear('default', client.client_id, '6.6.6.3'), { timeout: 5000 }).toBe(false);
    expect((await token(client.client_secret, '6.6.6.3')).status).toBe(429);
    // Every address of that client is counted again, not only the one that failed.
    expect((await token(client.client_secret, '203.0.113.2')).status).toBe(200);
    expect(peek.mock.calls.length).toBeGreaterThanOrEqual(3);
  });

  it('a pair known clear is the tenant\'s own, and is held by the app (it outlives a tenant actor)', async () => {
    await awayFromWindowEdge(60);
    const ctx = t.app.ctx;
    const peek = vi.spyOn(counter(), 'peekMany');
    const body = Buffer.from('grant_type=client_credentials');
    const req: HttpRequest = {
      id: 'throttle', method: 'POST', path: '/oidc/v1/token', rawQuery: '', ip: '198.51.100.9', body, params: {},
      headers: { authorization: basic('shared-id', 'secret'), 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length) },
    };
    const answer = (status: number) => async (): Promise<HttpResponse> => ({ status, headers: {}, body: '{}' });
    expect((await new AuthThrottle(ctx, 'tenant-a').around(req, '/token', answer(200))).status).toBe(200);
    expect(peek).toHaveBeenCalledTimes(1);
    // Another actor of the same tenant (the first evicted): still known clear.
    expect((await new AuthThrottle(ctx, 'tenant-a').around(req, '/token', answer(200))).status).toBe(200);
    expect(peek).toHaveBeenCalledTimes(1);
    // The same client id and address at another tenant: counted there.
    expect((await new AuthThrottle(ctx, 'tenant-b').around(req, '/token', answer(200))).status).toBe(200);
    expect(peek).toHaveBeenCalledTimes(2);
    // Tenant a's pair over the limit (counted elsewhere): its next failure stops it, tenant b's pair is untouched.
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) await counter().hit('tenant-a', 'client-auth-ip', `shared-id\u0000${req.ip}`, 60);
    expect((await new AuthThrottle(ctx, 'tenant-a').around(req, '/token', answer(401))).status).toBe(401);
    expect((await new AuthThrottle(ctx, 'tenant-a').around(req, '/token', answer(200))).status).toBe(429);
    expect((await new AuthThrottle(ctx, 'tenant-b').around(req, '/token', answer(200))).status).toBe(200);
  });

  it('a concurrent burst of wrong secrets from one address is stopped at the limit plus what was in flight', async () => {
    await awayFromWindowEdge(60);
    const statuses = await Promise.all(Array.from({ length: 3 * CLIENT_FAILURES_PER_SOURCE }, (_, i) => token(`burst-${i}`, '6.6.6.4').then((r) => r.status)));
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(CLIENT_FAILURES_PER_SOURCE);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    // Once the burst has landed, nothing more gets through from there.
    expect((await token('after', '6.6.6.4')).status).toBe(429);
    expect((await token(client.client_secret, '6.6.6.4')).status).toBe(429);
  });
});
