/**
 * `npm run bench --backend` (bench/backend.ts, bench/targets.ts, bench/run-report.ts), the parts that
 * need no database: the product's storage settings on SQLite, and how the report names the backend
 * and shows the database's CPU apart from the product's. The PostgreSQL side (scratch database,
 * Redis prefix, backends' CPU, clean-up) is backend-postgresql.test.ts.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { openBackend } from '../../bench/backend.js';
import { measure, type Measurement } from '../../bench/load.js';
import type { ServerProcess } from '../../bench/processes.js';
import { renderBackend, renderCompanions, type ScenarioResult } from '../../bench/run-report.js';
import { productTarget } from '../../bench/targets.js';

function scenario(name: string, companions?: Measurement['companions']): ScenarioResult {
  const measured = { cpuMicrosPerRequest: 100, ...(companions ? { companions } : {}) } as Measurement;
  return { name, label: name, connections: 50, product: { measured, checkProblems: [] }, ratio: null, cpuRatio: null };
}

describe('bench backend', () => {
  it('keeps the product on its SQLite in the temp dir by default, with no PostgreSQL or Redis setting', async () => {
    const backend = await openBackend('sqlite');
    expect(backend.info.name).toBe('sqlite');
    expect(backend.companions).toBeUndefined();
    const env = productTarget({}, backend).spec.env(4000, '/tmp/run');
    expect(env.STORAGE_SQLITE_PATH).toBe('/tmp/run/svc.db');
    for (const name of ['STORAGE_ADAPTER', 'STORAGE_POSTGRESQL_URL', 'REDIS_URL', 'REDIS_KEY_PREFIX']) expect(env[name]).toBeUndefined();
    await backend.close();
  });

  it('measures the companions of a window (the database backends) apart, per completed request', async () => {
    // A stand-in server in this process: the window's figures only need a pid and answers.
    const http = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const server: ServerProcess = {
      name: 'stand-in',
      pid: process.pid,
      baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
      dir: '/nonexistent',
      readyMs: 0,
      eventLoop: undefined,
      logs: () => ({ lines: 0, errorLines: 0, tail: [] }),
      stop: () => Promise.resolve(),
    };
    // Two backends at the start; one gone and a new one by the end (its CPU counts from its start).
    const readings = [
      new Map([
        [11, 1_000_000],
        [12, 50_000],
      ]),
      new Map([
        [11, 1_400_000],
        [13, 100_000],
      ]),
    ];
    try {
      const spec = { method: 'GET' as const, path: '/', headers: {}, check: () => undefined };
      const m = await measure(server, spec, { connections: 2, duration: 0.5, title: 'companions', companions: { label: 'PostgreSQL backends', cpu: () => Promise.resolve(readings.shift()!) } });
      expect(m.requests).toBeGreaterThan(0);
      expect(m.companions).toEqual({ label: 'PostgreSQL backends', processes: 2, cpuMicros: 500_000, cpuMicrosPerRequest: Math.round((500_000 / m.requests) * 10) / 10 });
      const plain = await measure(server, spec, { connections: 2, duration: 0.2, title: 'no companions' });
      expect(plain.companions).toBeUndefined();
    } finally {
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it('names the backend above the tables and lists the database CPU per scenario, apart from the product', () => {
    expect(renderBackend({ description: 'PostgreSQL 15 at h:5432' })).toBe('product storage: PostgreSQL 15 at h:5432; baseline: stock oidc-provider, in memory');
    expect(renderCompanions([scenario('jwks')])).toBe('');
    const pg = (perRequest: number | null) => ({ label: 'PostgreSQL backends', processes: 3, cpuMicros: 1000, cpuMicrosPerRequest: perRequest });
    expect(renderCompanions([scenario('cc-rs256', pg(0)), scenario('refresh', pg(312.4)), scenario('mgmt', pg(null))])).toBe(
      "PostgreSQL backends of the product's database, CPU µs/req (not in the product's CPU µs/req): cc-rs256 0, refresh 312, mgmt -",
    );
  });
});
