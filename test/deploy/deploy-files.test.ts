/**
 * The deployment files cannot be run here (no container engine on the development and CI
 * machines), so what can be checked without one is checked: every metric the Grafana dashboard
 * queries is one the service exports, and every path the Dockerfile copies or runs exists.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('deployment files', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ FEATURES_METRICS_ENABLED: 'true' });
  });
  afterAll(async () => t?.close());

  it('the Grafana dashboard queries only metrics the service exports', async () => {
    // One request of each kind the panels look at, so the labelled series exist.
    await fetch(`${t.url}/oidc/v1/jwks`);
    const exported = await (await fetch(`${t.url}/metrics`)).text();
    const dashboard = JSON.parse(readFileSync(`${ROOT}deploy/grafana/svc-dashboard.json`, 'utf8')) as { panels: Array<{ targets: Array<{ expr: string }> }> };
    const names = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((q) => q.expr.match(/\bsvc_[a-z0-9_]+/g) ?? [])));
    expect(names.size).toBeGreaterThan(8);
    for (const name of names) {
      expect(exported, name).toMatch(new RegExp(`^# TYPE ${name.replace(/_(bucket|sum|count)$/, '')} `, 'm'));
    }
  });

  it('the Dockerfile copies and runs paths that exist, as a non-root user with a health check', () => {
    const dockerfile = readFileSync(`${ROOT}Dockerfile`, 'utf8');
    for (const [, src] of dockerfile.matchAll(/^COPY (?!--from)(\S+)/gm)) expect(existsSync(`${ROOT}${src}`), src).toBe(true);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
    expect(dockerfile).toContain('CMD ["node", "dist/src/main.js"]');
    expect(existsSync(`${ROOT}src/main.ts`)).toBe(true);
    const compose = readFileSync(`${ROOT}compose.yaml`, 'utf8');
    for (const service of ['postgres:', 'redis:', 'svc:']) expect(compose).toContain(`  ${service}`);
  });
});
