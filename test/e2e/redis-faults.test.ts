/**
 * The service with REDIS_URL pointing at a private redis-server that the test stops and starts:
 * while Redis is away, readiness and health say so (503) and requests that need it fail fast with
 * 503 instead of hanging; when it is back the service recovers by itself, rotation events included.
 * Storage is the run's backend (PostgreSQL in the postgresql project, see vitest.config.ts); the
 * "other instance" opens the same database with its own connections to the same Redis.
 */
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEventBus } from '../../src/events/redis-bus.js';
import { rotate } from '../../src/keys/rotation.js';
import { Sealer } from '../../src/keys/sealer.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { bootstrap, postForm } from '../helpers/oauth.js';
import { expectProblem } from '../helpers/problem.js';
import { privateRedis, type PrivateRedis } from '../helpers/redis.js';
import { createClient, createUser } from '../helpers/users.js';
import { HttpSession, codeFlowClient } from '../helpers/code-flow.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Another instance: the same database and key, its own connections to the same Redis. */
async function otherInstance() {
  const storage = await t.openStorage();
  const events = new RedisEventBus(server.url);
  const deps = { storage, events, sealer: new Sealer(Buffer.alloc(32, 7)), config: t.app.ctx.config, log: pino({ level: 'silent' }) };
  return { deps, events, close: async () => (await events.close(), await storage.close()) };
}

async function publishedKids(): Promise<Set<string>> {
  const jwks = (await (await fetch(`${t.url}/oidc/v1/jwks`)).json()) as { keys: Array<{ kid: string }> };
  return new Set(jwks.keys.map((k) => k.kid));
}

/** kids another instance rotated in while this one's bus was away (the event was lost). */
let missedKids: string[] = [];

let server: PrivateRedis;
let t: TestApp;
let admin: string;
let deviceClient: { id: string; secret: string };
/** A user's tokens and their client, taken while Redis is up. */
let user: { access: string; refresh: string; client: { client_id: string; client_secret?: string } };
/** A direct connection, to see what the service keeps in Redis. */
let peek: Redis;

beforeAll(async () => {
  server = await privateRedis();
  t = await startTestApp({ REDIS_URL: server.url });
  admin = await t.token('svc:clients:read svc:clients:write svc:stats:read');
  const c = await createClient(t, { client_name: 'TV', grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], scope: 'openid' });
  deviceClient = { id: c.client_id, secret: c.client_secret };
  peek = new Redis(server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 100 });
  peek.on('error', () => {});
});
afterAll(async () => {
  peek?.disconnect();
  await t?.close();
  await server?.stop();
});

/** Runs fn and returns its result with the time it took. */
async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = Date.now();
  const v = await fn();
  return [v, Date.now() - started];
}

const readyz = async () => {
  const res = await fetch(`${t.url}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
};

const deviceAuth = () => postForm(t, '/device/auth', { scope: 'openid' }, deviceClient);

async function waitFor(cond: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  while (!(await cond())) {
    if (Date.now() - started > ms) throw new Error(`condition not met within ${ms} ms`);
    await sleep(50);
  }
  return Date.now() - started;
}

describe('with Redis up', () => {
  it('is ready with a redis check, counts rate limits and keeps device codes in Redis', async () => {
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } });
    const list = await api(t, 'GET', '/api/v1/clients', { token: admin });
    expect(list.status).toBe(200);
    expect(await peek.keys('svc:default:ratelimit:read:*')).toHaveLength(1);

    const da = await deviceAuth();
    expect(da.status).toBe(200);
    expect(await peek.exists(`svc:default:oidc:DeviceCode:${da.json.device_code}`)).toBe(1);

    const health = await api(t, 'GET', '/api/v1/stats/health', { token: admin });
    expect(health.status).toBe(200);
    expect(health.json.data.checks.redis).toEqual({ status: 'healthy' });

    const who = await createUser(t, { email_verified: true });
    const client = await codeFlowClient(t, await t.token('svc:clients:write'), 'https://rp.example.com/cb');
    const tokens = await new HttpSession(t.issuer, who).tokens(client, { scope: 'openid offline_access' });
    user = { access: tokens.access_token, refresh: tokens.refresh_token!, client };
  });
});

describe('with Redis frozen (connections open, no answers)', () => {
  beforeAll(() => server.pause());
  afterAll(() => server.resume());

  it('times out within about a second instead of hanging', async () => {
    const [ready, readyMs] = await timed(readyz);
    expect(ready.status).toBe(503);
    expect(readyMs).toBeLessThan(2000);
    const [res, ms] = await timed(() => api(t, 'GET', '/api/v1/clients', { token: admin }));
    expectProblem(res, 503, 'unavailable', '/api/v1/clients');
    expect(ms).toBeLessThan(2000);
  });
});

describe('with Redis down', () => {
  beforeAll(async () => {
    await server.stop();
  });

  it('/readyz answers 503 naming redis, at once', async () => {
    const [res, ms] = await timed(readyz);
    expect(res).toEqual({ status: 503, body: { status: 'not_ready', checks: { database: 'ok', redis: 'unavailable' } } });
    expect(ms).toBeLessThan(2000);
  });

  it('a Management call that needs Redis (the rate limiter) fails fast with 503 problem+json', async () => {
    const [res, ms] = await timed(() => api(t, 'GET', '/api/v1/clients', { token: admin }));
    const body = expectProblem(res, 503, 'unavailable', '/api/v1/clients');
    expect(body.request_id).toEqual(expect.any(String));
    expect(res.headers.get('retry-after')).toBe('1');
    expect(ms).toBeLessThan(2000);
  });

  it('the health check still answers, 503 degraded with redis unhealthy', async () => {
    const [res, ms] = await timed(() => api(t, 'GET', '/api/v1/stats/health', { token: admin }));
    expect(res.status).toBe(503);
    expect(res.json.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'healthy' }, redis: { status: 'unhealthy' } } });
    expect(ms).toBeLessThan(2500);
  });

  it('an OIDC request that needs Redis answers 503 temporarily_unavailable', async () => {
    const [res, ms] = await timed(deviceAuth);
    expect(res.status).toBe(503);
    expect(res.json).toMatchObject({ error: 'temporarily_unavailable' });
    expect(ms).toBeLessThan(2000);
  });

  it('userinfo, revocation and sign-out answer 503 with Retry-After, sign-out as the styled page to a browser', async () => {
    const info = await fetch(`${t.issuer}/userinfo`, { headers: { authorization: `Bearer ${user.access}` } });
    expect(info.status).toBe(503);
    expect(info.headers.get('retry-after')).toMatch(/^\d+$/);
    const basicAuth = `Basic ${Buffer.from(`${user.client.client_id}:${user.client.client_secret}`).toString('base64')}`;
    const revoked = await fetch(`${t.issuer}/token/revocation`, { method: 'POST', headers: { authorization: basicAuth, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: user.refresh }) });
    expect(revoked.status).toBe(503);
    expect(revoked.headers.get('retry-after')).toMatch(/^\d+$/);
    const signOut = await fetch(`${t.issuer}/session/end`, { headers: { accept: 'text/html' } });
    expect(signOut.status).toBe(503);
    expect(signOut.headers.get('content-type')).toMatch(/^text\/html/);
    expect(signOut.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await signOut.text()).toContain('<html lang="en">');
  });

  it('a rotation elsewhere commits although its event cannot be published', async () => {
    const other = await otherInstance();
    try {
      const result = await rotate(other.deps, 'default');
      missedKids = result.kids;
      expect(missedKids.length).toBeGreaterThan(0);
    } finally {
      await other.close();
    }
    await sleep(200);
    const kids = await publishedKids();
    expect(missedKids.some((k) => kids.has(k))).toBe(false);
  });

  it('requests that do not need Redis go on (discovery, JWKS, client_credentials tokens)', async () => {
    expect((await fetch(`${t.issuer.replace(/^http:\/\/localhost/, 'http://127.0.0.1')}/.well-known/openid-configuration`)).status).toBe(200);
    expect((await fetch(`${t.url}/oidc/v1/jwks`)).status).toBe(200);
    const token = await postForm(t, '/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }, bootstrap);
    expect(token.status).toBe(200);
  });
});

describe('when Redis is back', () => {
  beforeAll(async () => {
    await server.start();
  });

  it('recovers by itself within a few seconds', async () => {
    const ms = await waitFor(async () => (await readyz()).status === 200, 8000);
    expect(ms).toBeLessThan(8000);
    expect((await api(t, 'GET', '/api/v1/clients', { token: admin })).status).toBe(200);
    expect((await api(t, 'GET', '/api/v1/stats/health', { token: admin })).json.data.status).toBe('healthy');
    expect((await deviceAuth()).status).toBe(200);
  });

  it('catches up with the rotation whose event it missed', async () => {
    await waitFor(async () => {
      const kids = await publishedKids();
      return missedKids.every((k) => kids.has(k));
    }, 3000);
  });

  it('receives a rotation event published after recovery and reloads the keystore', async () => {
    const other = await otherInstance();
    try {
      expect(await other.events.ready(3000)).toBe(true);
      const before = await publishedKids();
      const result = await rotate(other.deps, 'default');
      expect(result.kids.some((k) => before.has(k))).toBe(false);
      const ms = await waitFor(async () => {
        const kids = await publishedKids();
        return result.kids.every((k) => kids.has(k));
      }, 3000);
      // CONTRACT.md: every instance refreshes within 1 s (some slack for a loaded test machine).
      expect(ms).toBeLessThan(1500);
    } finally {
      await other.close();
    }
  });
});
