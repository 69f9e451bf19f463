/**
 * Two instances (PostgreSQL + Redis) start at the same moment with an algorithm removed from
 * SECURITY_KEY_STORE_ALGORITHMS: both find the removed algorithm's keys active, and the keys are
 * demoted once (one writer, one `jwks.demoted` entry, one window), not once per instance; both then
 * sign with the remaining algorithm and publish the same JWKS. The demotion itself is covered on
 * both backends by key-algorithms.test.ts; two SQLite connections of one process would block each
 * other, so the concurrent start runs here.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import { api, restartTestApp, startTestApp, type TestApp } from '../helpers/app.js';

const publishedKids = async (t: TestApp): Promise<string[]> =>
  ((await (await fetch(`${t.url}/oidc/v1/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid).sort();

describe('two instances starting at once after an algorithm was removed', () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    // The first app last: its close drops the database.
    for (const t of apps.reverse()) await t.close();
  });

  it('demote its keys once', async () => {
    const first = await startTestApp();
    apps.push(first);
    expect(first.backend).toBe('postgresql');
    const before = await first.app.ctx.storage.keys.list('default');
    expect(before.map((k) => k.alg).sort()).toEqual(['ES256', 'EdDSA', 'RS256']);
    await first.app.close();

    const settings = { SECURITY_KEY_STORE_ALGORITHMS: 'EdDSA' };
    const [one, two] = await Promise.all([restartTestApp(first, settings), restartTestApp(first, settings)]);
    apps.push(one!, two!);

    const rows = await first.sql("SELECT kid, alg, status, promoted, rotated_at, expires_at FROM signing_keys WHERE tenant_id = 'default' ORDER BY alg");
    expect(rows.map((r) => [r.alg, r.status, r.promoted])).toEqual([
      ['ES256', 'expiring', false],
      ['EdDSA', 'active', true],
      ['RS256', 'expiring', false],
    ]);
    // One transaction wrote both: the same moment, the same window.
    expect(String(rows[0]!.rotated_at)).toBe(String(rows[2]!.rotated_at));
    expect(String(rows[0]!.expires_at)).toBe(String(rows[2]!.expires_at));

    const token = await one!.token('svc:audit:read svc:jwks:read');
    expect(decodeProtectedHeader(token).alg).toBe('EdDSA');
    const audit = await api(one!, 'GET', '/api/v1/audit?type=jwks.demoted', { token });
    expect(audit.json.data).toHaveLength(1);
    expect(audit.json.data[0].details).toMatchObject({ trigger: 'algorithms', algorithms: ['ES256', 'RS256'] });
    // Both serve the three keys (two verifying for the window) and sign with EdDSA.
    expect(await publishedKids(one!)).toEqual(before.map((k) => k.kid).sort());
    expect(await publishedKids(two!)).toEqual(before.map((k) => k.kid).sort());
    expect(decodeProtectedHeader(await two!.token('svc:jwks:read')).alg).toBe('EdDSA');
  });
});
