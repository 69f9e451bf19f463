/** Issue 19 item 6: features.metrics.path, prefix and include_default_metrics act. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

describe('metrics settings', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      FEATURES_METRICS_ENABLED: 'true',
      FEATURES_METRICS_PATH: '/internal/prom',
      FEATURES_METRICS_PREFIX: 'acme_idp_',
      FEATURES_METRICS_INCLUDE_DEFAULT_METRICS: 'false',
    });
  });
  afterAll(async () => t?.close());

  it('serves under the configured path with the configured prefix and without the default Node metrics', async () => {
    await api(t, 'GET', '/oidc/v1/jwks');
    const res = await api(t, 'GET', '/internal/prom');
    expect(res.status).toBe(200);
    expect(res.text).toContain('# TYPE acme_idp_http_requests_total counter');
    expect(res.text).toContain('# TYPE acme_idp_tenant_pool_size gauge');
    expect(res.text).not.toMatch(/^# TYPE svc_/m);
    expect(res.text).not.toMatch(/process_cpu_user_seconds_total|nodejs_heap_size_total_bytes|nodejs_eventloop_lag/);
    // The default path is not served.
    expect((await api(t, 'GET', '/metrics')).status).toBe(404);
  });

  it('refuses a path or prefix that would not work, at start, naming the setting', async () => {
    await expect(startTestApp({ FEATURES_METRICS_ENABLED: 'true', FEATURES_METRICS_PATH: 'metrics' })).rejects.toThrow(/FEATURES_METRICS_PATH/);
    await expect(startTestApp({ FEATURES_METRICS_ENABLED: 'true', FEATURES_METRICS_PREFIX: 'bad-prefix' })).rejects.toThrow(/FEATURES_METRICS_PREFIX/);
  });
});

describe('metrics with the default Node metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ FEATURES_METRICS_ENABLED: 'true', FEATURES_METRICS_PREFIX: 'x_', FEATURES_METRICS_INCLUDE_DEFAULT_METRICS: 'true' });
  });
  afterAll(async () => t?.close());

  it('adds them under the same prefix', async () => {
    const res = await api(t, 'GET', '/metrics');
    expect(res.text).toContain('# TYPE x_process_cpu_user_seconds_total counter');
    expect(res.text).toMatch(/# TYPE x_nodejs_heap_size_total_bytes gauge/);
  });
});
