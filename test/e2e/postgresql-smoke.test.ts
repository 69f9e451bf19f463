/**
 * The whole service on PostgreSQL (STORAGE_ADAPTER=postgresql, a migrated database of its own):
 * discovery, a client_credentials token, and a client created and listed through the Management
 * API, with the rows landing in PostgreSQL under the default tenant.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';

let db: TestDatabase;
let t: TestApp;
let admin: pg.Client;

beforeAll(async () => {
  db = await migratedDatabase();
  t = await startTestApp({ STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: db.url });
  admin = await db.admin();
});

afterAll(async () => {
  await admin?.end();
  await t?.close();
  await db?.drop();
});

describe('the service on PostgreSQL', () => {
  it('is ready, with the database check passing', async () => {
    const res = await api(t, 'GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'ready', checks: { database: 'ok' } });
  });

  it('serves discovery and a JWKS from keys stored in PostgreSQL', async () => {
    const res = await api(t, 'GET', '/oidc/v1/.well-known/openid-configuration');
    expect(res.status).toBe(200);
    expect(res.json.issuer).toBe(t.issuer);
    const jwks = await api(t, 'GET', '/oidc/v1/jwks');
    expect(jwks.status).toBe(200);
    const stored = await admin.query("SELECT kid FROM signing_keys WHERE tenant_id = 'default' AND status = 'active'");
    expect((jwks.json.keys as Array<{ kid: string }>).map((k) => k.kid).sort()).toEqual(stored.rows.map((r) => r.kid).sort());
  });

  it('issues a client_credentials token and creates and lists a client', async () => {
    const token = await t.token('svc:clients:read svc:clients:write');
    expect(token.split('.')).toHaveLength(3);

    const created = await api(t, 'POST', '/api/v1/clients', { token, body: { client_name: 'Stored in PostgreSQL', grant_types: ['client_credentials'] } });
    expect(created.status).toBe(201);
    const id = created.json.data.client_id as string;
    expect(created.json.data.client_secret).toEqual(expect.any(String));

    const listed = await api(t, 'GET', '/api/v1/clients?include_count=true&limit=100', { token });
    expect(listed.status).toBe(200);
    expect((listed.json.data as Array<{ client_id: string }>).map((c) => c.client_id)).toContain(id);
    expect(listed.json.pagination.total_count).toBe((listed.json.data as unknown[]).length);

    const got = await api(t, 'GET', `/api/v1/clients/${id}`, { token });
    expect(got.json.data).toMatchObject({ client_id: id, client_name: 'Stored in PostgreSQL', active: true });
    expect(got.json.data.client_secret).toBeUndefined();

    const row = await admin.query('SELECT tenant_id, client_name FROM clients WHERE client_id = $1', [id]);
    expect(row.rows).toEqual([{ tenant_id: 'default', client_name: 'Stored in PostgreSQL' }]);
  });

  it('answers a client_id PostgreSQL cannot store (U+0000) with invalid_client, not a 500', async () => {
    const res = await fetch(`${t.url}/oidc/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=%00&client_secret=x',
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_client');
  });
});
