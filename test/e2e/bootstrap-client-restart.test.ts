/**
 * The bootstrap client across restarts, single-tenant (src/bootstrap.ts): the configured secret is
 * followed while the stored one is the bootstrap's, and a secret regenerated through the API is
 * never put back by a later start with the old value still configured (the operator regenerated
 * it because that value leaked). Multi-tenant and two instances: bootstrap-restart-postgresql.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGEMENT_SCOPES } from '../../src/oidc/scopes.js';
import { api, restartTestApp, startTestApp, BOOTSTRAP_ID, BOOTSTRAP_SECRET, type TestApp } from '../helpers/app.js';
import { captureLog } from '../helpers/log.js';

const CHANGED = 'bootstrap-secret-changed-0123456789';
const basic = (secret: string) => `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${secret}`).toString('base64')}`;

async function tokenRequest(t: TestApp, secret: string, scope = 'svc:clients:read') {
  const res = await fetch(`${t.url}/oidc/v1/token`, {
    method: 'POST',
    headers: { authorization: basic(secret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope }),
  });
  return { status: res.status, body: (await res.json()) as { access_token?: string } };
}

describe('bootstrap client secret across restarts', () => {
  let first: TestApp;
  let current: TestApp;

  beforeAll(async () => {
    first = await startTestApp();
    current = first;
  });
  afterAll(async () => {
    if (current !== first) await current.close();
    await first?.close();
  });

  async function restart(env: Record<string, string>) {
    const captured = captureLog();
    await current.app.close();
    const next = await restartTestApp(first, env, { log: captured.log });
    if (current !== first) await current.close();
    current = next;
    return captured;
  }

  it('follows a changed configured secret while the stored one is the bootstrap’s', async () => {
    const captured = await restart({ SVC_BOOTSTRAP_CLIENT_SECRET: CHANGED });
    expect(captured.warnings().map((l) => l.msg)).toContain('bootstrap client secret changed to the configured value');
    expect((await tokenRequest(current, CHANGED)).status).toBe(200);
    expect((await tokenRequest(current, BOOTSTRAP_SECRET)).status).toBe(401);
  });

  it('keeps a secret regenerated through the API when restarted with the old one configured', async () => {
    const admin = (await tokenRequest(current, CHANGED, MANAGEMENT_SCOPES.join(' '))).body.access_token;
    const res = await api(current, 'POST', `/api/v1/clients/${BOOTSTRAP_ID}/secret`, { token: admin });
    expect(res.status, res.text).toBe(200);
    const regenerated = res.json.data.client_secret as string;
    expect((await tokenRequest(current, CHANGED)).status).toBe(401);

    const captured = await restart({ SVC_BOOTSTRAP_CLIENT_SECRET: CHANGED });
    const warnings = captured.warnings().map((l) => String(l.msg));
    expect(warnings.filter((m) => /^SVC_BOOTSTRAP_CLIENT_SECRET is ignored: .*POST \/api\/v1\/clients\/bootstrap-admin\/secret .*remove the variable$/.test(m))).toHaveLength(1);
    expect(warnings).not.toContain('bootstrap client secret changed to the configured value');
    expect((await tokenRequest(current, regenerated)).status).toBe(200);
    expect((await tokenRequest(current, CHANGED)).status).toBe(401);

    // Nor on the next start with yet another value: the secret stays the API's.
    await restart({ SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET });
    expect((await tokenRequest(current, regenerated)).status).toBe(200);
    expect((await tokenRequest(current, BOOTSTRAP_SECRET)).status).toBe(401);
  });

  it('says on every start that SVC_BOOTSTRAP_ADMIN_EMAIL/PASSWORD do nothing in single-tenant mode, and creates nobody', async () => {
    const email = 'would-be-root@example.com';
    for (let i = 0; i < 2; i++) {
      const captured = await restart({ SVC_BOOTSTRAP_ADMIN_EMAIL: email, SVC_BOOTSTRAP_ADMIN_PASSWORD: 'Bootstrap-pass-123' });
      const warned = captured.warnings().filter((l) => /^SVC_BOOTSTRAP_ADMIN_EMAIL\/PASSWORD are set but ignored: .*multi-tenant mode only.*svc users create --role admin/.test(String(l.msg)));
      expect(warned).toHaveLength(1);
      expect(JSON.stringify(warned)).not.toContain('Bootstrap-pass-123');
    }
    expect(await current.app.ctx.storage.users.findByEmail('default', email)).toBeUndefined();
  });
});
