/**
 * Issue 12 item 12: in multi-tenant production `default` resolved (header or `default.<domain>`)
 * to a live tenant with the bare issuer and generated keys for it, and /metrics was public on every
 * tenant host. Now `default` is an unknown tenant there, and metrics are served on the `_ops` host
 * only, or to the configured bearer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../helpers/problem.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send } from '../helpers/tenant-http.js';

const mtEnv = (prefix: string, extra: Record<string, string> = {}) => ({
  MULTI_TENANCY_ENABLED: 'true',
  STORAGE_ADAPTER: 'postgresql',
  REDIS_URL: SHARED_REDIS_URL,
  REDIS_KEY_PREFIX: prefix,
  FEATURES_METRICS_ENABLED: 'true',
  NODE_ENV: 'production',
  ...extra,
});

describe('multi-tenant production', () => {
  let t: TestApp;
  let prefix: string;
  beforeAll(async () => {
    prefix = uniquePrefix('infra-mt');
    t = await startTestApp(mtEnv(prefix));
  });
  afterAll(async () => {
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('does not resolve `default` by header or subdomain, and generates no keys for it', async () => {
    const viaHeader = await send(t.app.port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: 'default' });
    expectProblem(viaHeader, 404, 'not-found', '/oidc/v1/.well-known/openid-configuration');
    const viaHost = await send(t.app.port, 'GET', '/oidc/v1/jwks', { sub: 'default' });
    expectProblem(viaHost, 404, 'not-found', '/oidc/v1/jwks');
    const api = await send(t.app.port, 'GET', '/api/v1/clients', { tenant: 'default' });
    expect(api.status).toBe(404);
    expect(await t.sql('SELECT kid FROM signing_keys WHERE tenant_id = ?', ['default'])).toEqual([]);
    expect(t.app.ctx.registry.activeNow('default')).toBeUndefined();
  });

  it('serves metrics on the _ops host only', async () => {
    for (const o of [{}, { tenant: '_platforms' }, { sub: '_platforms' }, { tenant: '_ops' }]) {
      const res = await send(t.app.port, 'GET', '/metrics', o);
      expect(res.status, JSON.stringify(o)).toBe(404);
      expect(res.text).not.toContain('svc_');
    }
    const ops = await send(t.app.port, 'GET', '/metrics', { sub: '_ops' });
    expect(ops.status).toBe(200);
    expect(ops.text).toContain('svc_tenant_pool_size');
  });
});

describe('multi-tenant production with a metrics bearer', () => {
  let t: TestApp;
  let prefix: string;
  const BEARER = 'metrics-bearer-0123456789abcdef';
  beforeAll(async () => {
    prefix = uniquePrefix('infra-mtb');
    t = await startTestApp(mtEnv(prefix, { FEATURES_METRICS_BEARER_TOKEN: BEARER }));
  });
  afterAll(async () => {
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('needs the bearer on every host, _ops included', async () => {
    for (const o of [{ sub: '_ops' }, { sub: '_platforms' }, { sub: '_ops', token: 'wrong' }, { sub: '_ops', token: `${BEARER}x` }]) {
      const res = await send(t.app.port, 'GET', '/metrics', o);
      expectProblem(res, 401, 'unauthorized', '/metrics');
      expect(res.headers['www-authenticate']).toBe('Bearer');
    }
    for (const o of [{ sub: '_ops', token: BEARER }, { sub: '_platforms', token: BEARER }]) {
      const res = await send(t.app.port, 'GET', '/metrics', o);
      expect(res.status).toBe(200);
      expect(res.text).toContain('svc_http_requests_total');
    }
  });
});

describe('single-tenant', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ FEATURES_METRICS_ENABLED: 'true', NODE_ENV: 'production' });
  });
  afterAll(async () => t?.close());

  it('keeps `default` and public metrics', async () => {
    const res = await send(t.app.port, 'GET', '/oidc/v1/.well-known/openid-configuration');
    expect(res.status).toBe(200);
    expect((await send(t.app.port, 'GET', '/metrics')).status).toBe(200);
  });
});
