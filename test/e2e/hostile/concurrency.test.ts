/**
 * Hostile input, part 5: concurrent writes to one record (CONTRACT.md). Each request succeeds or
 * fails with 404, 409, 429 or 503, never 500; the final record is exactly one of the written
 * versions (never a mix of two), and deletes and revocations happen once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../../helpers/app.js';
import { requestToken } from '../../helpers/oauth.js';
import { expectProblem } from '../../helpers/problem.js';
import { ALL_SCOPES, nextId } from '../../helpers/hostile.js';

const HIGH = '1000000';
const N = 10;
let t: TestApp;
let admin: string;

beforeAll(async () => {
  t = await startTestApp({ SECURITY_RATE_LIMIT_READ: HIGH, SECURITY_RATE_LIMIT_WRITE: HIGH, SECURITY_RATE_LIMIT_DELETE: HIGH, SECURITY_RATE_LIMIT_SENSITIVE: HIGH });
  admin = await t.token(ALL_SCOPES);
});
afterAll(async () => t?.close());

type Res = Awaited<ReturnType<typeof api>>;
const FAILURES: Record<number, string> = { 404: 'not-found', 409: 'conflict', 429: 'rate-limited', 503: 'unavailable' };

/** Every response is one of `ok` or an allowed failure with its problem body. */
function expectSettled(results: Res[], ok: number[], path: (i: number) => string): Res[] {
  results.forEach((res, i) => {
    expect([...ok, ...Object.keys(FAILURES).map(Number)], `request ${i}: ${res.status} ${res.text}`).toContain(res.status);
    if (!ok.includes(res.status)) expectProblem(res, res.status, FAILURES[res.status]!, path(i));
  });
  return results.filter((r) => ok.includes(r.status));
}

const auditCount = async (type: string, match: (details: Record<string, unknown>) => boolean) =>
  (await t.app.ctx.storage.audit.list('default', { type }, { limit: 1000, include_count: false })).items.filter((e) => match(e.details)).length;

async function newClient(body: Record<string, unknown> = {}) {
  const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: `race ${nextId()}`, grant_types: ['client_credentials'], scope: 'svc:stats:read', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.json.data as { client_id: string; client_secret: string };
}
async function newUser() {
  const res = await api(t, 'POST', '/api/v1/users', { token: admin, body: { email: `race-${nextId()}@example.com`, password: 'Correct-Horse-Battery-1' } });
  expect(res.status, res.text).toBe(201);
  return res.json.data as { id: string };
}

describe('concurrent updates of one record end as exactly one written version', () => {
  it(`${N} parallel PATCHes of one client with different names`, async () => {
    const { client_id } = await newClient();
    const path = `/api/v1/clients/${client_id}`;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) => api(t, 'PATCH', path, { token: admin, body: { client_name: `name ${i}`, description: `description ${i}` } })),
    );
    const ok = expectSettled(results, [200], () => path);
    expect(ok.length).toBeGreaterThan(0);
    const final = (await api(t, 'GET', path, { token: admin })).json.data;
    // One version, not a mix: name and description come from the same request.
    expect(final.description).toBe(final.client_name.replace('name', 'description'));
    expect(ok.map((r) => r.json.data)).toContainEqual(final);
    expect(await auditCount('client.updated', (d) => d.client_id === client_id)).toBe(ok.length);
  });

  it(`${N} parallel PUTs of one client, each replacing every mutable field`, async () => {
    const { client_id } = await newClient();
    const path = `/api/v1/clients/${client_id}`;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        api(t, 'PUT', path, { token: admin, body: { client_name: `put ${i}`, grant_types: ['client_credentials'], scope: 'svc:stats:read', description: `put ${i}`, tags: [`t${i}`], ...(i % 2 ? { default_max_age: 60 + i } : {}) } }),
      ),
    );
    const ok = expectSettled(results, [200], () => path);
    const final = (await api(t, 'GET', path, { token: admin })).json.data;
    const i = Number(final.client_name.split(' ')[1]);
    expect(final).toMatchObject({ description: `put ${i}`, tags: [`t${i}`] });
    expect(final.default_max_age).toBe(i % 2 ? 60 + i : null); // unset fields are null (spec 2.2 shown whole)
    expect(ok.map((r) => r.json.data)).toContainEqual(final);
  });

  it(`${N} parallel PATCHes of one user with different names`, async () => {
    const { id } = await newUser();
    const path = `/api/v1/users/${id}`;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) => api(t, 'PATCH', path, { token: admin, body: { given_name: `given ${i}`, family_name: `family ${i}`, nickname: `nick ${i}` } })),
    );
    const ok = expectSettled(results, [200], () => path);
    const final = (await api(t, 'GET', path, { token: admin })).json.data;
    const i = final.given_name.split(' ')[1];
    expect(final).toMatchObject({ family_name: `family ${i}`, nickname: `nick ${i}` });
    expect(ok.map((r) => r.json.data)).toContainEqual(final);
  });

  it(`${N} parallel locks and unlocks of one user`, async () => {
    const { id } = await newUser();
    const results = await Promise.all(Array.from({ length: N }, (_, i) => api(t, i % 2 ? 'DELETE' : 'POST', `/api/v1/users/${id}/lock`, { token: admin })));
    const ok = expectSettled(results, [200], () => `/api/v1/users/${id}/lock`);
    const final = (await api(t, 'GET', `/api/v1/users/${id}`, { token: admin })).json.data;
    expect(ok.map((r) => r.json.data)).toContainEqual(final);
    const locks = await auditCount('user.locked', (d) => d.user_id === id);
    const unlocks = await auditCount('user.unlocked', (d) => d.user_id === id);
    expect(locks + unlocks).toBe(ok.length);
  });

  it('parallel secret regenerations of one client: only the secret of the last one works', async () => {
    const client = await newClient();
    const path = `/api/v1/clients/${client.client_id}/secret`;
    const before = (await requestToken(t, { id: client.client_id, secret: client.client_secret }, 'svc:stats:read')).json.access_token as string;
    const results = await Promise.all(Array.from({ length: 5 }, () => api(t, 'POST', path, { token: admin })));
    const ok = expectSettled(results, [200], () => path);
    const secrets = ok.map((r) => r.json.data.client_secret as string);
    const working: string[] = [];
    for (const secret of [client.client_secret, ...secrets]) {
      const res = await requestToken(t, { id: client.client_id, secret }, 'svc:stats:read');
      expect([200, 401], JSON.stringify(res.json)).toContain(res.status);
      if (res.status === 200) working.push(secret);
    }
    expect(working).toHaveLength(1);
    expect(secrets).toContain(working[0]);
    // A token issued before the regenerations is no longer accepted.
    expect((await api(t, 'GET', '/api/v1/stats/health', { token: before })).status).toBe(401);
  });

  it('parallel rotations: one active, promoted key per algorithm afterwards', async () => {
    const results = await Promise.all(Array.from({ length: 4 }, () => api(t, 'POST', '/api/v1/jwks/rotate', { token: admin })));
    expectSettled(results, [200], () => '/api/v1/jwks/rotate');
    const keys = (await api(t, 'GET', '/api/v1/jwks', { token: admin })).json.data as Array<{ kid: string; alg: string; status: string; promoted: boolean }>;
    for (const alg of t.app.ctx.config.security.key_store.algorithms) {
      expect(keys.filter((k) => k.alg === alg && k.status === 'active'), alg).toHaveLength(1);
      expect(keys.filter((k) => k.alg === alg && k.promoted), alg).toHaveLength(1);
    }
    const published = (await (await fetch(`${t.url}/oidc/v1/jwks`)).json()) as { keys: Array<{ kid: string }> };
    for (const k of keys.filter((x) => x.status !== 'retired')) expect(published.keys.map((p) => p.kid)).toContain(k.kid);
    // The service still signs and verifies with what it promoted.
    expect((await api(t, 'GET', '/api/v1/audit/types', { token: await t.token(ALL_SCOPES) })).status).toBe(200);
  });
});

describe('concurrent deletes and revocations happen once', () => {
  it(`${N} parallel DELETEs of one client: one 204, the rest 404`, async () => {
    const { client_id } = await newClient();
    const path = `/api/v1/clients/${client_id}`;
    const results = await Promise.all(Array.from({ length: N }, () => api(t, 'DELETE', path, { token: admin })));
    expectSettled(results, [204], () => path);
    expect(results.filter((r) => r.status === 204)).toHaveLength(1);
    expect(results.filter((r) => r.status === 404)).toHaveLength(N - 1);
    expectProblem(await api(t, 'GET', path, { token: admin }), 404, 'not-found', path);
    expect(await auditCount('client.deleted', (d) => d.client_id === client_id)).toBe(1);
  });

  it('a DELETE racing PATCHes of one client: deleted for good, never brought back', async () => {
    const { client_id } = await newClient();
    const path = `/api/v1/clients/${client_id}`;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) => (i === N / 2 ? api(t, 'DELETE', path, { token: admin }) : api(t, 'PATCH', path, { token: admin, body: { client_name: `racer ${i}` } }))),
    );
    expect(results[N / 2]!.status).toBe(204);
    expectSettled(results, [200, 204], () => path);
    expectProblem(await api(t, 'GET', path, { token: admin }), 404, 'not-found', path);
    expect(await t.app.ctx.storage.clients.get('default', client_id)).toBeUndefined();
  });

  it(`${N} parallel revocations of one registration token: one 204, the rest 404`, async () => {
    const jti = (await api(t, 'POST', '/api/v1/registration-tokens', { token: admin, body: { expires_in: 3600, max_usage_count: 3 } })).json.data.jti as string;
    const path = `/api/v1/registration-tokens/${jti}`;
    const results = await Promise.all(Array.from({ length: N }, () => api(t, 'DELETE', path, { token: admin })));
    expectSettled(results, [204], () => path);
    expect(results.filter((r) => r.status === 204)).toHaveLength(1);
    expect(await auditCount('registration_token.revoked', (d) => d.jti === jti)).toBe(1);
  });

  it(`${N} parallel revocations of one session: revoked, each success audited once`, async () => {
    const user = await newUser();
    const now = Math.floor(Date.now() / 1000);
    const jti = `race-session-${nextId()}`;
    await t.app.ctx.storage.oidc.upsert('default', 'Session', jti, { jti, kind: 'Session', uid: `uid-${jti}`, iat: now - 10, exp: now + 3600, accountId: user.id, loginTs: now - 10, authorizations: {} }, now + 3600);
    const path = `/api/v1/sessions/${jti}`;
    const results = await Promise.all(Array.from({ length: N }, () => api(t, 'DELETE', path, { token: admin })));
    const ok = expectSettled(results, [204], () => path);
    expect(ok.length).toBeGreaterThan(0);
    expectProblem(await api(t, 'GET', path, { token: admin }), 404, 'not-found', path);
    expect(await auditCount('session.revoked', (d) => d.jti === jti)).toBe(ok.length);
  });

  it('parallel creations of users with one e-mail: one 201, the rest 409', async () => {
    const email = `same-${nextId()}@example.com`;
    const before = await t.app.ctx.storage.users.count('default');
    const results = await Promise.all(Array.from({ length: 5 }, () => api(t, 'POST', '/api/v1/users', { token: admin, body: { email, password: 'Correct-Horse-Battery-1' } })));
    expectSettled(results, [201], () => '/api/v1/users');
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(4);
    expect(await t.app.ctx.storage.users.count('default')).toBe(before + 1);
  });
});
