/** Prometheus metrics (CONTRACT.md names) when features.metrics.enabled; absent otherwise. */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

describe('metrics endpoint', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ FEATURES_METRICS_ENABLED: 'true' });
  });
  afterAll(async () => t?.close());

  it('serves every metric CONTRACT.md names, with the counters moving', async () => {
    const token = await t.token('svc:clients:read');
    await api(t, 'GET', '/api/v1/clients', { token });
    const res = await api(t, 'GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    for (const name of [
      'svc_http_requests_total',
      'svc_http_request_duration_seconds',
      'svc_tokens_issued_total',
      'svc_tenant_pool_size',
      'svc_tenant_pool_hits_total',
      'svc_tenant_pool_misses_total',
      'svc_tenant_pool_evictions_total',
      'svc_worker_pool_queue_depth',
      'svc_worker_task_duration_seconds',
      'svc_login_attempts_total',
      'svc_process_cpu_user_seconds_total',
    ]) {
      expect(res.text, name).toContain(`# TYPE ${name} `);
    }
    expect(res.text).toMatch(/svc_tokens_issued_total\{grant_type="client_credentials"\} [1-9]/);
    expect(res.text).toMatch(/svc_http_requests_total\{route="\/api\/v1\/clients",method="GET",status="200"\} [1-9]/);
    expect(res.text).toMatch(/svc_tenant_pool_size [1-9]/);
  });

  it('counts JWKS answered on the fast path, and folds unknown OIDC paths into one label', async () => {
    for (let i = 0; i < 3; i++) expect((await api(t, 'GET', '/oidc/v1/jwks')).status).toBe(200);
    const probe = `no-such-${Date.now()}`;
    expect((await api(t, 'GET', `/oidc/v1/${probe}`)).status).toBe(404);
    expect((await api(t, 'GET', '/oidc/v1/interaction/abcdefgh12345678')).status).toBeGreaterThanOrEqual(400);
    // A made-up lower-case action after an interaction id: no series of its own (was one per suffix).
    const suffixes = ['qwzxkvjp', 'mnbvcxzl', 'plokijuh'];
    for (const suffix of suffixes) expect((await api(t, 'GET', `/oidc/v1/interaction/x/${suffix}`)).status).toBeGreaterThanOrEqual(400);
    const text = (await api(t, 'GET', '/metrics')).text;
    const jwks = /svc_http_requests_total\{route="oidc\/jwks",method="GET",status="200"\} (\d+)/.exec(text);
    expect(Number(jwks?.[1])).toBeGreaterThanOrEqual(3);
    expect(text).toMatch(/svc_http_request_duration_seconds_count\{route="oidc\/jwks",method="GET"\} [1-9]/);
    expect(text).toContain('route="oidc:other"');
    expect(text).toContain('route="oidc/interaction/:uid"');
    expect(text).not.toContain(probe);
    expect(text).not.toContain('abcdefgh12345678');
    for (const suffix of suffixes) expect(text).not.toContain(suffix);
    expect(text).toContain('route="oidc/interaction:other"');
  });
  it('made-up HTTP methods are refused by the front door and leave no series behind (the method label stays bounded)', async () => {
    const probe = `XYZZY${Date.now()}`;
    const url = new URL('/oidc/v1/jwks', t.url);
    for (let i = 0; i < 5; i++) {
      // uWS parses only the standard methods: anything else closes the connection unanswered.
      const outcome = await new Promise<number | 'closed'>((resolve) => {
        const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: `${probe}${i}` }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', () => resolve('closed'));
        req.end();
      });
      expect(outcome === 'closed' || outcome >= 400, String(outcome)).toBe(true);
    }
    expect((await api(t, 'GET', '/oidc/v1/jwks')).status).toBe(200);
    const text = (await api(t, 'GET', '/metrics')).text;
    expect(text).not.toContain(probe);
    expect(text).toMatch(/svc_http_requests_total\{route="oidc\/jwks",method="GET",status="200"\} [1-9]/);
  });

  it('answers 405 with Allow: GET, HEAD to any other method, as the probes do (never the scrape)', async () => {
    for (const method of ['POST', 'DELETE', 'PUT', 'PATCH']) {
      const res = await api(t, method, '/metrics');
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow'), method).toBe('GET, HEAD');
      expect(res.text, method).not.toContain('svc_http_requests_total');
    }
    expect((await api(t, 'HEAD', '/metrics')).status).toBe(200);
  });

  it('labels userinfo as oidc/userinfo, not oidc:other (the label list follows the provider routes)', async () => {
    // No token: oidc-provider answers 401, which is still a request to the userinfo endpoint.
    const res = await api(t, 'GET', '/oidc/v1/userinfo');
    expect(res.status).toBe(401);
    const text = (await api(t, 'GET', '/metrics')).text;
    expect(text).toMatch(/svc_http_requests_total\{route="oidc\/userinfo",method="GET",status="401"\} [1-9]/);
    expect(text).not.toContain('route="oidc/me"');
  });
});

describe('metrics disabled (default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('has no metrics endpoint', async () => {
    const res = await api(t, 'GET', '/metrics');
    expect(res.status).toBe(404);
  });
});
