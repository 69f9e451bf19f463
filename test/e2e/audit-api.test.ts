/**
 * Audit and statistics API (spec 4.7, 2.6) against the real server: filters, paging, types,
 * stats, 404/422, the overview with a failing section and health going 503 when the database
 * check fails.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AuditEntry } from '../../src/storage/types.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

const ENTRY_FIELDS = ['client_id', 'details', 'id', 'ip_address', 'status', 'tenant_id', 'timestamp', 'type', 'user_agent', 'user_id', 'username'].sort();

function entry(id: string, over: Partial<AuditEntry>): AuditEntry {
  return {
    id,
    type: 'test.event',
    status: 'success',
    username: null,
    user_id: null,
    client_id: null,
    ip_address: '192.0.2.1',
    user_agent: 'vitest',
    tenant_id: 'default',
    details: {},
    timestamp: '2025-06-01T00:00:00.000Z',
    ...over,
  };
}

describe('audit and statistics API', () => {
  let t: TestApp;
  let audit: string;
  let stats: string;
  const insert = (e: AuditEntry) => t.app.ctx.storage.audit.insert('default', e);
  const list = (query: string) => api(t, 'GET', `/api/v1/audit?${query}`, { token: audit });
  const ids = (res: { json: { data: Array<{ id: string }> } }) => res.json.data.map((e) => e.id);

  beforeAll(async () => {
    t = await startTestApp();
    audit = await t.token('svc:audit:read');
    stats = await t.token(['svc:stats:read', 'svc:clients:read']);
    // A small history in June 2025, one second apart, so order and ranges are predictable.
    const at = (s: number) => new Date(Date.UTC(2025, 5, 1, 10, 0, s)).toISOString();
    await insert(entry('e1', { type: 'login', username: 'alice', user_id: 'u-alice', client_id: 'web', timestamp: at(1), details: { method: 'password', n: 1 } }));
    await insert(entry('e2', { type: 'failed_login', status: 'failed', username: 'bob', client_id: 'web', timestamp: at(2) }));
    await insert(entry('e3', { type: 'login', username: 'bob', user_id: 'u-bob', client_id: 'spa', timestamp: at(3) }));
    await insert(entry('e4', { type: 'login.extra', username: 'alice', status: 'info', timestamp: at(4) }));
    await insert(entry('e5', { type: 'client.created', status: 'warning', client_id: 'spa', timestamp: at(5), details: { client_id: 'spa', nested: { a: [1, 'x'] } } }));
    await insert(entry('e6', { type: 'logout', username: 'alice', timestamp: '2025-06-02T00:00:00.000Z' }));
  });
  afterAll(async () => t?.close());

  it('lists entries newest first as exactly the CONTRACT.md audit entry', async () => {
    const res = await list('to=2025-06-30T00:00:00Z');
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual(['e6', 'e5', 'e4', 'e3', 'e2', 'e1']);
    expect(res.json.pagination).toEqual({ has_more: false, next_cursor: null });
    for (const e of res.json.data) expect(Object.keys(e).sort()).toEqual(ENTRY_FIELDS);
    expect(res.json.data.find((e: AuditEntry) => e.id === 'e5')).toEqual({
      id: 'e5', type: 'client.created', status: 'warning', username: null, user_id: null, client_id: 'spa', ip_address: '192.0.2.1',
      user_agent: 'vitest', tenant_id: 'default', details: { client_id: 'spa', nested: { a: [1, 'x'] } }, timestamp: '2025-06-01T10:00:05.000Z',
    });
  });

  it('filters by exact type, status, username, client_id and an inclusive time range', async () => {
    expect(ids(await list('type=login&to=2025-07-01'))).toEqual(['e3', 'e1']); // not login.extra
    expect(ids(await list('status=failed&to=2025-07-01'))).toEqual(['e2']);
    expect(ids(await list('username=alice&to=2025-07-01'))).toEqual(['e6', 'e4', 'e1']);
    expect(ids(await list('client_id=spa&to=2025-07-01'))).toEqual(['e5', 'e3']);
    expect(ids(await list('username=alice&type=login&client_id=web&to=2025-07-01'))).toEqual(['e1']);
    // Bounds are inclusive; other offsets are the same instant.
    expect(ids(await list('from=2025-06-01T10:00:02Z&to=2025-06-01T10:00:04Z'))).toEqual(['e4', 'e3', 'e2']);
    expect(ids(await list(`from=${encodeURIComponent('2025-06-01T12:00:02+02:00')}&to=${encodeURIComponent('2025-06-01T12:00:03.000+02:00')}`))).toEqual(['e3', 'e2']);
    // A date alone is the whole UTC day.
    expect(ids(await list('from=2025-06-01&to=2025-06-01'))).toEqual(['e5', 'e4', 'e3', 'e2', 'e1']);
    expect(ids(await list('from=2025-06-02&to=2025-06-02'))).toEqual(['e6']);
    expect(ids(await list('type=nothing-like-this'))).toEqual([]);
  });

  it('pages with opaque cursors, counts on request, and rejects tampered cursors and bad limits', async () => {
    const range = 'from=2025-06-01&to=2025-06-01';
    const p1 = await list(`${range}&limit=2&include_count=true`);
    expect(ids(p1)).toEqual(['e5', 'e4']);
    expect(p1.json.pagination).toMatchObject({ has_more: true, total_count: 5, next_cursor: expect.any(String) });
    const p2 = await list(`${range}&limit=2&after=${encodeURIComponent(p1.json.pagination.next_cursor)}`);
    expect(ids(p2)).toEqual(['e3', 'e2']);
    expect(p2.json.pagination).not.toHaveProperty('total_count');
    const p3 = await list(`${range}&limit=2&after=${encodeURIComponent(p2.json.pagination.next_cursor)}`);
    expect(ids(p3)).toEqual(['e1']);
    expect(p3.json.pagination).toEqual({ has_more: false, next_cursor: null });

    const cursor = p1.json.pagination.next_cursor as string;
    const tampered = await list(`limit=2&after=${encodeURIComponent(`${cursor.slice(0, -2)}xx`)}`);
    expect(tampered.status).toBe(422);
    expect(tampered.json.errors).toEqual([{ field: 'after', message: expect.any(String) }]);
    expect((await list('limit=0')).status).toBe(422);
    expect((await list('limit=101')).status).toBe(422);
  });

  it('answers 422 problem+json for malformed from/to, a reversed range and an unknown status', async () => {
    for (const [query, field] of [
      ['from=yesterday', 'from'],
      ['from=2025-13-01', 'from'],
      ['to=2025-06-01T10:00:00', 'to'], // no time zone: ambiguous
      ['to=2025-02-30T00:00:00Z', 'to'],
      ['from=2025-06-02&to=2025-06-01', 'from'],
      ['status=bogus', 'status'],
    ] as const) {
      const res = await list(query);
      expect(res.status, query).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.json).toMatchObject({ type: 'urn:svc:error:validation', title: 'Validation Error', status: 422, instance: '/api/v1/audit' });
      expect(res.json.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  it('gets one entry and answers 404 for an unknown id', async () => {
    const res = await api(t, 'GET', '/api/v1/audit/e1', { token: audit });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ id: 'e1', type: 'login', details: { method: 'password', n: 1 } });
    const missing = await api(t, 'GET', '/api/v1/audit/nope', { token: audit });
    expect(missing.status).toBe(404);
    expect(missing.json.type).toBe('urn:svc:error:not-found');
  });

  it('lists distinct types as a flat array (not taken for an entry id)', async () => {
    const res = await api(t, 'GET', '/api/v1/audit/types', { token: audit });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(['data']);
    expect(res.json.data).toEqual(expect.arrayContaining(['client.created', 'failed_login', 'login', 'login.extra', 'logout']));
    expect(res.json.data).toEqual([...res.json.data].sort());
    expect(new Set(res.json.data).size).toBe(res.json.data.length);
  });

  it('computes statistics (scope svc:stats:read) and counts today in UTC', async () => {
    expect((await api(t, 'GET', '/api/v1/audit/stats', { token: audit })).status).toBe(403);
    const get = async () => {
      const res = await api(t, 'GET', '/api/v1/audit/stats', { token: stats });
      expect(res.status).toBe(200);
      expect(Object.keys(res.json.data).sort()).toEqual(['failedLogins', 'successfulLogins', 'todayCount', 'totalActivities', 'uniqueUsers']);
      return res.json.data as Record<string, number>;
    };
    const before = await get();
    const now = new Date().toISOString();
    await insert(entry('s1', { type: 'login', user_id: 'stats-u1', timestamp: now }));
    await insert(entry('s2', { type: 'login', user_id: 'stats-u2', timestamp: now }));
    await insert(entry('s3', { type: 'failed_login', status: 'failed', username: 'stats-u3', timestamp: now }));
    await insert(entry('s4', { type: 'login', status: 'failed', user_id: 'stats-u1', timestamp: '2025-01-01T00:00:00.000Z' }));
    const after = await get();
    expect(after.totalActivities - before.totalActivities).toBe(4);
    expect(after.todayCount - before.todayCount).toBe(3);
    expect(after.successfulLogins - before.successfulLogins).toBe(2);
    expect(after.failedLogins - before.failedLogins).toBe(2);
    expect(after.uniqueUsers - before.uniqueUsers).toBe(3);
  });

  it('overview: every section answers, totals match the lists, and a failing section carries {error} alone', async () => {
    const res = await api(t, 'GET', '/api/v1/stats', { token: stats });
    expect(res.status).toBe(200);
    const data = res.json.data;
    expect(Object.keys(data).sort()).toEqual(['activity', 'clients', 'grants', 'sessions', 'users']);
    const clientList = await api(t, 'GET', '/api/v1/clients?include_count=true', { token: stats });
    expect(data.clients).toEqual({ total: clientList.json.pagination.total_count });
    expect(data.sessions).toEqual({ total: expect.any(Number), active: expect.any(Number) });
    expect(data.grants).toEqual({ total: expect.any(Number) });
    expect(data.activity).toEqual((await api(t, 'GET', '/api/v1/audit/stats', { token: stats })).json.data);
    // Users are another module's work; either a total or the failing-section shape, never a 500.
    expect(typeof data.users.total === 'number' || typeof data.users.error === 'string').toBe(true);

    const spy = vi.spyOn(t.app.ctx.storage.clients, 'count').mockRejectedValue(new Error('SQLITE_ERROR near "SELECT count(*) FROM clients"'));
    try {
      const failing = await api(t, 'GET', '/api/v1/stats', { token: stats });
      expect(failing.status).toBe(200);
      expect(failing.json.data.clients).toEqual({ error: expect.any(String) });
      expect(failing.text).not.toContain('SQLITE');
      expect(failing.json.data.activity).toEqual(data.activity);
      expect(failing.json.data.sessions).toEqual(data.sessions);
    } finally {
      spy.mockRestore();
    }
    expect((await api(t, 'GET', '/api/v1/stats', { token: stats })).json.data.clients).toEqual(data.clients);
  });

  it('health: healthy with 200, degraded with 503 when the database check fails', async () => {
    const ok = await api(t, 'GET', '/api/v1/stats/health', { token: stats });
    expect(ok.status).toBe(200);
    expect(ok.json.data).toEqual({
      status: 'healthy',
      // database, oidc, config, and redis when the run's backend uses it.
      checks: t.healthChecks,
      timestamp: expect.any(String),
    });
    expect(Object.keys(t.healthChecks).sort()).toEqual(t.redis ? ['config', 'database', 'oidc', 'redis'] : ['config', 'database', 'oidc']);
    expect((await api(t, 'GET', '/api/v1/stats/health', { token: audit })).status).toBe(403);

    const spy = vi.spyOn(t.app.ctx.storage, 'ping').mockRejectedValue(new Error('database is locked'));
    try {
      const bad = await api(t, 'GET', '/api/v1/stats/health', { token: stats });
      expect(bad.status).toBe(503);
      expect(bad.json.data).toEqual({ status: 'degraded', checks: { ...t.healthChecks, database: { status: 'unhealthy' } }, timestamp: expect.any(String) });
    } finally {
      spy.mockRestore();
    }
    expect((await api(t, 'GET', '/api/v1/stats/health', { token: stats })).status).toBe(200);
  });
});
