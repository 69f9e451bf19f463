import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/paths.js';
import { migrate } from '../../src/storage/sqlite/db.js';
import type { SqliteStorage } from '../../src/storage/sqlite/index.js';
import type { ClientRecord, PageRequest } from '../../src/storage/types.js';
import { at, auditEntry, clientRecord, keyRecord, openTempStorage, type TempStorage } from '../helpers/storage.js';

const A = 'tenant-a';
const B = 'tenant-b';
const page = (over: Partial<PageRequest> = {}): PageRequest => ({ limit: 25, include_count: false, ...over });
const nowSec = () => Math.floor(Date.now() / 1000);

let t: TempStorage;
let s: SqliteStorage;
beforeAll(() => {
  t = openTempStorage();
  s = t.storage;
});
afterAll(async () => t?.close());

describe('migrations', () => {
  const versions = readdirSync(join(MIGRATIONS_DIR, 'sqlite'))
    .filter((f) => f.endsWith('.sql'))
    .map((f) => f.replace(/\.sql$/, ''))
    .sort();

  it('applies every migration file once, recorded in schema_migrations', () => {
    const applied = s.db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
    expect(applied).toEqual(versions);
    expect(versions).toEqual(expect.arrayContaining(['001_init', '002_login_attempts']));
  });

  it('is idempotent: migrate again and reopening apply nothing and keep the data', async () => {
    expect(migrate(s.db)).toEqual([]);
    await s.clients.create(A, clientRecord('survives-reopen'));
    const appliedAt = s.db.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all();
    s = await t.reopen();
    expect(migrate(s.db)).toEqual([]);
    expect(s.db.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all()).toEqual(appliedAt);
    expect((await s.clients.get(A, 'survives-reopen'))?.client_id).toBe('survives-reopen');
    await s.clients.delete(A, 'survives-reopen');
  });

  it('answers ping while open', async () => {
    await expect(s.ping()).resolves.toBeUndefined();
    expect(s.kind).toBe('sqlite');
  });
});

describe('clients', () => {
  const tenant = 'clients-t';
  const other = 'clients-u';

  it('creates and reads back every column', async () => {
    const r = clientRecord('c1', {
      secret_sealed: 'v1.x.y.z',
      secret_generation: 2,
      active: false,
      created_at: at(1),
      updated_at: at(2),
      metadata: { description: 'desc', tags: ['a', 'b'], scope: 'svc:clients:read', redirect_uris: ['https://app.example/cb'] },
    });
    await s.clients.create(tenant, r);
    expect(await s.clients.get(tenant, 'c1')).toEqual(r);
    expect(await s.clients.get(tenant, 'unknown')).toBeUndefined();
  });

  it('refuses a duplicate client_id within a tenant but allows it in another tenant', async () => {
    await expect(s.clients.create(tenant, clientRecord('c1'))).rejects.toThrow();
    await s.clients.create(other, clientRecord('c1', { metadata: { client_name: 'Other tenant c1' } }));
    expect((await s.clients.get(other, 'c1'))?.metadata.client_name).toBe('Other tenant c1');
    expect((await s.clients.get(tenant, 'c1'))?.metadata.client_name).toBe('Client c1');
  });

  it('updates only the given columns and bumps updated_at', async () => {
    const before = (await s.clients.get(tenant, 'c1'))!;
    const updated = await s.clients.update(tenant, 'c1', { active: true, metadata: { ...before.metadata, client_name: 'Renamed', description: undefined } });
    expect(updated).toBeDefined();
    expect(updated!.active).toBe(true);
    expect(updated!.metadata.client_name).toBe('Renamed');
    expect(updated!.metadata.description).toBeUndefined();
    expect(updated!.secret_hash).toBe(before.secret_hash);
    expect(updated!.secret_sealed).toBe(before.secret_sealed);
    expect(updated!.secret_generation).toBe(2);
    expect(updated!.created_at).toBe(before.created_at);
    expect(updated!.updated_at > before.updated_at).toBe(true);

    const secret = await s.clients.update(tenant, 'c1', { secret_hash: null, secret_sealed: null, bump_generation: true });
    expect(secret).toMatchObject({ secret_hash: null, secret_sealed: null, secret_generation: 3, active: true });
    expect(secret!.metadata.client_name).toBe('Renamed');
    expect(await s.clients.update(tenant, 'nope', { active: false })).toBeUndefined();
  });

  it('keeps the search columns in step with the metadata', async () => {
    expect((await s.clients.list(tenant, { q: 'Renamed' }, page())).items.map((c) => c.client_id)).toEqual(['c1']);
    expect((await s.clients.list(tenant, { q: 'Client c1' }, page())).items).toEqual([]);
    expect((await s.clients.list(tenant, { q: 'desc' }, page())).items).toEqual([]); // description cleared
  });

  it('records usage: adds counts and keeps the latest last_used_at', async () => {
    await s.clients.recordUsage(tenant, 'c1', 3, at(100));
    await s.clients.recordUsage(tenant, 'c1', 2, at(50)); // an older batch does not move last_used_at back
    const r = (await s.clients.get(tenant, 'c1'))!;
    expect(r.tokens_issued).toBe(5);
    expect(r.last_used_at).toBe(at(100));
    await s.clients.recordUsage(tenant, 'unknown', 1, at(1)); // no row, no error
  });

  it('deletes', async () => {
    await s.clients.create(tenant, clientRecord('to-delete'));
    expect(await s.clients.delete(tenant, 'to-delete')).toBe(true);
    expect(await s.clients.get(tenant, 'to-delete')).toBeUndefined();
    expect(await s.clients.delete(tenant, 'to-delete')).toBe(false);
  });

  describe('list', () => {
    const lt = 'list-t';
    const ids: string[] = [];
    beforeAll(async () => {
      // 12 clients: every third spa, every fourth native, every fifth inactive; two share a timestamp.
      for (let i = 0; i < 12; i++) {
        const id = `L${String(i).padStart(2, '0')}`;
        ids.push(id);
        const type = i % 3 === 0 ? 'spa' : i % 4 === 0 ? 'native' : 'web';
        await s.clients.create(
          lt,
          clientRecord(id, {
            created_at: at(i === 7 ? 6 : i),
            active: i % 5 !== 0,
            metadata: { application_type: type, client_name: `App ${i} ${i === 2 ? '100%_done' : ''}`, description: i === 4 ? 'Searchable Text' : undefined },
          }),
        );
      }
    });

    it('orders by created_at then client_id', async () => {
      const res = await s.clients.list(lt, {}, page({ include_count: true }));
      expect(res.items.map((c) => c.client_id)).toEqual(ids);
      expect(res.has_more).toBe(false);
      expect(res.total_count).toBe(12);
      expect(await s.clients.count(lt)).toBe(12);
    });

    it('pages with a cursor of the last row, counting the whole filtered set on each page', async () => {
      const seen: string[] = [];
      let after: PageRequest['after'];
      let pages = 0;
      for (;;) {
        const res = await s.clients.list(lt, {}, page({ limit: 5, after, include_count: true }));
        pages++;
        expect(res.total_count).toBe(12);
        seen.push(...res.items.map((c) => c.client_id));
        if (!res.has_more) break;
        const last = res.items[res.items.length - 1]!;
        after = { created_at: last.created_at, id: last.client_id };
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(ids);
    });

    it('does not report more when the page is exactly full', async () => {
      const res = await s.clients.list(lt, {}, page({ limit: 12 }));
      expect(res.items).toHaveLength(12);
      expect(res.has_more).toBe(false);
      expect(res.total_count).toBeUndefined();
    });

    it('filters by application_type and active, alone and together', async () => {
      const spa = await s.clients.list(lt, { application_type: 'spa' }, page({ include_count: true }));
      expect(spa.items.map((c) => c.client_id)).toEqual(['L00', 'L03', 'L06', 'L09']);
      expect(spa.total_count).toBe(4);
      expect(spa.items.every((c) => c.metadata.application_type === 'spa')).toBe(true);
      const inactive = await s.clients.list(lt, { active: false }, page());
      expect(inactive.items.map((c) => c.client_id)).toEqual(['L00', 'L05', 'L10']);
      const activeNative = await s.clients.list(lt, { application_type: 'native', active: true }, page());
      expect(activeNative.items.map((c) => c.client_id)).toEqual(['L04', 'L08']);
      const filteredPage = await s.clients.list(lt, { active: true }, page({ limit: 2, include_count: true }));
      expect(filteredPage.items.map((c) => c.client_id)).toEqual(['L01', 'L02']);
      expect(filteredPage.has_more).toBe(true);
      expect(filteredPage.total_count).toBe(9);
    });

    it('searches name, id and description case-insensitively, with LIKE wildcards taken literally', async () => {
      expect((await s.clients.list(lt, { q: 'searchable text' }, page())).items.map((c) => c.client_id)).toEqual(['L04']);
      expect((await s.clients.list(lt, { q: 'l11' }, page())).items.map((c) => c.client_id)).toEqual(['L11']);
      expect((await s.clients.list(lt, { q: '%' }, page())).items.map((c) => c.client_id)).toEqual(['L02']);
      expect((await s.clients.list(lt, { q: '0%_d' }, page())).items.map((c) => c.client_id)).toEqual(['L02']);
      expect((await s.clients.list(lt, { q: '_' }, page())).items.map((c) => c.client_id)).toEqual(['L02']);
      expect((await s.clients.list(lt, { q: "' OR '1'='1" }, page())).items).toEqual([]);
      expect((await s.clients.list(lt, { q: '\\' }, page())).items).toEqual([]);
    });
  });

  it('isolates tenants on every method', async () => {
    const a = 'iso-a';
    const b = 'iso-b';
    await s.clients.create(a, clientRecord('shared-name', { metadata: { client_name: 'Only in A', description: 'findme' } }));
    await s.clients.create(a, clientRecord('a-only', { metadata: { client_name: 'Also A' } }));
    const snapshot = await s.clients.get(a, 'a-only');

    expect(await s.clients.get(b, 'a-only')).toBeUndefined();
    expect(await s.clients.list(b, {}, page({ include_count: true }))).toEqual({ items: [], has_more: false, total_count: 0 });
    expect((await s.clients.list(b, { q: 'findme' }, page())).items).toEqual([]);
    expect(await s.clients.count(b)).toBe(0);
    expect(await s.clients.update(b, 'a-only', { active: false, metadata: { ...snapshot!.metadata, client_name: 'hijacked' } })).toBeUndefined();
    expect(await s.clients.delete(b, 'a-only')).toBe(false);
    await s.clients.recordUsage(b, 'a-only', 99, at(999));

    expect(await s.clients.get(a, 'a-only')).toEqual(snapshot);
    expect(await s.clients.count(a)).toBe(2);
    // A cursor from tenant A's page reaches nothing in tenant B.
    const first = await s.clients.list(a, {}, page({ limit: 1 }));
    const last = first.items[0] as ClientRecord;
    expect((await s.clients.list(b, {}, page({ after: { created_at: last.created_at, id: last.client_id } }))).items).toEqual([]);
  });
});

describe('oidc payloads', () => {
  const ot = 'oidc-t';

  it('upserts and finds by model and id; a second upsert replaces the payload', async () => {
    await s.oidc.upsert(ot, 'Session', 's1', { uid: 'u1', accountId: 'acc' }, nowSec() + 60);
    expect(await s.oidc.find(ot, 'Session', 's1')).toEqual({ payload: { uid: 'u1', accountId: 'acc' }, expires_at: expect.any(Number), consumed: false });
    expect(await s.oidc.find(ot, 'Grant', 's1')).toBeUndefined();
    await s.oidc.upsert(ot, 'Session', 's1', { uid: 'u1', accountId: 'acc2' }, null);
    expect(await s.oidc.find(ot, 'Session', 's1')).toEqual({ payload: { uid: 'u1', accountId: 'acc2' }, expires_at: null, consumed: false });
  });

  it('hides expired rows from every reader', async () => {
    await s.oidc.upsert(ot, 'Interaction', 'old', { uid: 'old-uid', userCode: 'OLD-CODE' }, nowSec() - 1);
    expect(await s.oidc.find(ot, 'Interaction', 'old')).toBeUndefined();
    expect(await s.oidc.findByUid(ot, 'Interaction', 'old-uid')).toBeUndefined();
    expect(await s.oidc.findByUserCode(ot, 'Interaction', 'OLD-CODE')).toBeUndefined();
    expect((await s.oidc.listByModel(ot, 'Interaction')).map((r) => r.id)).not.toContain('old');
  });

  it('consumes', async () => {
    await s.oidc.upsert(ot, 'AuthorizationCode', 'code1', { grantId: 'g1' }, nowSec() + 60);
    await s.oidc.consume(ot, 'AuthorizationCode', 'code1');
    expect((await s.oidc.find(ot, 'AuthorizationCode', 'code1'))?.consumed).toBe(true);
  });

  it('finds by uid and by user code within the model', async () => {
    await s.oidc.upsert(ot, 'Session', 's2', { uid: 'uid-2' }, nowSec() + 60);
    await s.oidc.upsert(ot, 'DeviceCode', 'd1', { userCode: 'ABCD-EFGH', grantId: 'g2' }, nowSec() + 60);
    expect((await s.oidc.findByUid(ot, 'Session', 'uid-2'))?.payload).toEqual({ uid: 'uid-2' });
    expect(await s.oidc.findByUid(ot, 'Grant', 'uid-2')).toBeUndefined();
    expect((await s.oidc.findByUserCode(ot, 'DeviceCode', 'ABCD-EFGH'))?.payload).toEqual({ userCode: 'ABCD-EFGH', grantId: 'g2' });
    expect(await s.oidc.findByUserCode(ot, 'DeviceCode', 'abcd-efgh')).toBeUndefined();
  });

  it('revokes every artefact of a grant and nothing else', async () => {
    await s.oidc.upsert(ot, 'AccessToken', 'at1', { grantId: 'gx' }, nowSec() + 60);
    await s.oidc.upsert(ot, 'RefreshToken', 'rt1', { grantId: 'gx' }, nowSec() + 60);
    await s.oidc.upsert(ot, 'AccessToken', 'at2', { grantId: 'gy' }, nowSec() + 60);
    await s.oidc.upsert('oidc-u', 'AccessToken', 'at1', { grantId: 'gx' }, nowSec() + 60);
    await s.oidc.revokeByGrantId(ot, 'gx');
    expect(await s.oidc.find(ot, 'AccessToken', 'at1')).toBeUndefined();
    expect(await s.oidc.find(ot, 'RefreshToken', 'rt1')).toBeUndefined();
    expect(await s.oidc.find(ot, 'AccessToken', 'at2')).toBeDefined();
    expect(await s.oidc.find('oidc-u', 'AccessToken', 'at1')).toBeDefined();
  });

  it('destroys one row', async () => {
    await s.oidc.destroy(ot, 'AccessToken', 'at2');
    expect(await s.oidc.find(ot, 'AccessToken', 'at2')).toBeUndefined();
  });

  it('lists unexpired rows of a model and sweeps expired ones of every tenant', async () => {
    const lt = 'oidc-list';
    await s.oidc.upsert(lt, 'Grant', 'g-live', { clientId: 'c' }, nowSec() + 60);
    await s.oidc.upsert(lt, 'Grant', 'g-forever', { clientId: 'c' }, null);
    await s.oidc.upsert(lt, 'Grant', 'g-dead', { clientId: 'c' }, nowSec() - 5);
    await s.oidc.upsert('oidc-list-2', 'Grant', 'g-dead-2', {}, nowSec() - 5);
    expect((await s.oidc.listByModel(lt, 'Grant')).map((r) => r.id).sort()).toEqual(['g-forever', 'g-live']);
    const expiredBefore = s.db.prepare('SELECT count(*) FROM oidc_payloads WHERE expires_at <= ?').pluck().get(nowSec()) as number;
    expect(expiredBefore).toBeGreaterThanOrEqual(3); // g-dead, g-dead-2, 'old' interaction
    expect(await s.oidc.sweepExpired(nowSec())).toBe(expiredBefore);
    expect(s.db.prepare("SELECT id FROM oidc_payloads WHERE id IN ('g-dead', 'g-dead-2', 'old')").all()).toEqual([]);
    expect((await s.oidc.listByModel(lt, 'Grant')).map((r) => r.id).sort()).toEqual(['g-forever', 'g-live']);
  });

  it('isolates tenants on every method', async () => {
    const a = 'oidc-iso-a';
    const b = 'oidc-iso-b';
    await s.oidc.upsert(a, 'Session', 'sess', { uid: 'iso-uid', userCode: 'ISO-CODE', grantId: 'iso-grant' }, nowSec() + 60);
    expect(await s.oidc.find(b, 'Session', 'sess')).toBeUndefined();
    expect(await s.oidc.findByUid(b, 'Session', 'iso-uid')).toBeUndefined();
    expect(await s.oidc.findByUserCode(b, 'Session', 'ISO-CODE')).toBeUndefined();
    expect(await s.oidc.listByModel(b, 'Session')).toEqual([]);
    await s.oidc.consume(b, 'Session', 'sess');
    await s.oidc.destroy(b, 'Session', 'sess');
    await s.oidc.revokeByGrantId(b, 'iso-grant');
    // The same id in tenant B is a separate row.
    await s.oidc.upsert(b, 'Session', 'sess', { uid: 'b' }, nowSec() + 60);
    expect(await s.oidc.find(a, 'Session', 'sess')).toEqual({ payload: { uid: 'iso-uid', userCode: 'ISO-CODE', grantId: 'iso-grant' }, expires_at: expect.any(Number), consumed: false });
    expect((await s.oidc.find(b, 'Session', 'sess'))?.payload).toEqual({ uid: 'b' });
  });
});

describe('signing keys', () => {
  const kt = 'keys-t';

  it('inserts several keys at once and lists them newest first with every field', async () => {
    const old = keyRecord('k-old', { created_at: at(1), status: 'expiring', promoted: false, rotated_at: at(5), expires_at: at(10) });
    const fresh = keyRecord('k-new', { created_at: at(5), alg: 'ES256', public_jwk: { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' } });
    await s.keys.insert(kt, [old, fresh]);
    expect(await s.keys.list(kt)).toEqual([fresh, old]);
  });

  it('updates status, flags and timestamps', async () => {
    await s.keys.update(kt, 'k-new', { status: 'expiring', promoted: false, retire_requested: true, rotated_at: at(9), expires_at: at(20) });
    const k = (await s.keys.list(kt)).find((x) => x.kid === 'k-new')!;
    expect(k).toMatchObject({ status: 'expiring', promoted: false, retire_requested: true, rotated_at: at(9), expires_at: at(20) });
    await s.keys.update(kt, 'k-new', {});
    await s.keys.update(kt, 'k-new', { promoted: true, retire_requested: false });
    expect((await s.keys.list(kt)).find((x) => x.kid === 'k-new')).toMatchObject({ promoted: true, retire_requested: false, status: 'expiring' });
  });

  it('refuses an unknown status', async () => {
    await expect(s.keys.insert(kt, [keyRecord('bad', { status: 'weird' as never })])).rejects.toThrow();
    expect((await s.keys.list(kt)).map((k) => k.kid)).not.toContain('bad');
  });

  it('commits a transaction and rolls one back on error', async () => {
    await s.keys.transaction(kt, async () => {
      await s.keys.insert(kt, [keyRecord('k-tx', { created_at: at(30) })]);
      await s.keys.update(kt, 'k-old', { status: 'retired' });
    });
    expect((await s.keys.list(kt)).map((k) => [k.kid, k.status])).toEqual([
      ['k-tx', 'active'],
      ['k-new', 'expiring'],
      ['k-old', 'retired'],
    ]);
    await expect(
      s.keys.transaction(kt, async () => {
        await s.keys.insert(kt, [keyRecord('k-rolled-back', { created_at: at(40) })]);
        await s.keys.update(kt, 'k-tx', { status: 'retired' });
        throw new Error('rotation failed');
      }),
    ).rejects.toThrow('rotation failed');
    const after = await s.keys.list(kt);
    expect(after.map((k) => k.kid)).not.toContain('k-rolled-back');
    expect(after.find((k) => k.kid === 'k-tx')?.status).toBe('active');
  });

  it('isolates tenants', async () => {
    expect(await s.keys.list('keys-other')).toEqual([]);
    await s.keys.update('keys-other', 'k-tx', { status: 'retired' });
    expect((await s.keys.list(kt)).find((k) => k.kid === 'k-tx')?.status).toBe('active');
    await s.keys.insert('keys-other', [keyRecord('k-tx')]); // same kid, other tenant
    expect((await s.keys.list('keys-other')).map((k) => k.kid)).toEqual(['k-tx']);
    expect(await s.keys.list(kt)).toHaveLength(3);
  });
});

describe('audit', () => {
  const au = 'audit-t';
  beforeAll(async () => {
    const entries = [
      auditEntry('e1', { type: 'login', status: 'success', user_id: 'u1', username: 'alice', timestamp: at(1) }),
      auditEntry('e2', { type: 'failed_login', status: 'failed', username: 'alice', timestamp: at(2) }),
      auditEntry('e3', { type: 'login', status: 'failed', user_id: 'u2', username: 'bob', timestamp: at(3) }),
      auditEntry('e4', { type: 'client.created', client_id: 'c1', details: { client_id: 'c1', nested: { n: 1 } }, timestamp: at(4) }),
      auditEntry('e5', { type: 'login', status: 'success', user_id: 'u1', username: 'alice', timestamp: at(5) }),
      auditEntry('e6', { type: 'client.deleted', client_id: 'c1', status: 'info', timestamp: at(5) }),
      auditEntry('today', { type: 'logout', user_id: 'u3', timestamp: new Date().toISOString() }),
    ];
    for (const e of entries) await s.audit.insert(au, { ...e, tenant_id: au });
    await s.audit.insert('audit-other', auditEntry('x1', { type: 'secret.type', tenant_id: 'audit-other', user_id: 'ux', timestamp: at(1) }));
  });

  it('reads one entry back with its details object', async () => {
    expect(await s.audit.get(au, 'e4')).toEqual(auditEntry('e4', { tenant_id: au, type: 'client.created', client_id: 'c1', details: { client_id: 'c1', nested: { n: 1 } }, timestamp: at(4) }));
    expect(await s.audit.get(au, 'nope')).toBeUndefined();
  });

  it('lists newest first and pages backwards in time', async () => {
    const all = await s.audit.list(au, {}, page({ include_count: true }));
    expect(all.items.map((e) => e.id)).toEqual(['today', 'e6', 'e5', 'e4', 'e3', 'e2', 'e1']);
    expect(all.total_count).toBe(7);
    const seen: string[] = [];
    let after: PageRequest['after'];
    for (;;) {
      const res = await s.audit.list(au, {}, page({ limit: 3, after }));
      seen.push(...res.items.map((e) => e.id));
      if (!res.has_more) break;
      const last = res.items[res.items.length - 1]!;
      after = { created_at: last.timestamp, id: last.id };
    }
    expect(seen).toEqual(all.items.map((e) => e.id));
  });

  it('filters by type, status, username, user_id, client_id and time range', async () => {
    const ids = async (f: Parameters<typeof s.audit.list>[1]) => (await s.audit.list(au, f, page({ include_count: true }))).items.map((e) => e.id);
    expect(await ids({ type: 'login' })).toEqual(['e5', 'e3', 'e1']);
    expect(await ids({ type: 'login', status: 'failed' })).toEqual(['e3']);
    expect(await ids({ status: 'info' })).toEqual(['e6']);
    expect(await ids({ username: 'alice' })).toEqual(['e5', 'e2', 'e1']);
    expect(await ids({ user_id: 'u1' })).toEqual(['e5', 'e1']);
    expect(await ids({ client_id: 'c1' })).toEqual(['e6', 'e4']);
    expect(await ids({ from: at(2), to: at(4) })).toEqual(['e4', 'e3', 'e2']);
    expect(await ids({ type: "login' OR '1'='1" })).toEqual([]);
    const counted = await s.audit.list(au, { type: 'login' }, page({ limit: 1, include_count: true }));
    expect(counted.total_count).toBe(3);
    expect(counted.has_more).toBe(true);
  });

  it('lists distinct types of the tenant, sorted', async () => {
    expect(await s.audit.types(au)).toEqual(['client.created', 'client.deleted', 'failed_login', 'login', 'logout']);
  });

  it('computes statistics', async () => {
    const todayStart = new Date(new Date().setUTCHours(0, 0, 0, 0)).toISOString();
    expect(await s.audit.stats(au, todayStart)).toEqual({
      totalActivities: 7,
      uniqueUsers: 4, // u1, alice (no user_id), u2, u3
      todayCount: 1,
      successfulLogins: 2,
      failedLogins: 2, // a failed_login entry and a failed login
    });
    expect(await s.audit.stats('audit-empty', todayStart)).toEqual({ totalActivities: 0, uniqueUsers: 0, todayCount: 0, successfulLogins: 0, failedLogins: 0 });
  });

  it('isolates tenants', async () => {
    expect(await s.audit.get(au, 'x1')).toBeUndefined();
    expect(await s.audit.get('audit-other', 'e1')).toBeUndefined();
    expect((await s.audit.list('audit-other', {}, page({ include_count: true }))).total_count).toBe(1);
    expect(await s.audit.types('audit-other')).toEqual(['secret.type']);
    expect(await s.audit.types(au)).not.toContain('secret.type');
    expect((await s.audit.list(au, { user_id: 'ux' }, page())).items).toEqual([]);
  });

  it('refuses an unknown status', async () => {
    await expect(s.audit.insert(au, auditEntry('bad', { status: 'meh' as never }))).rejects.toThrow();
  });
});

describe('login attempts', () => {
  const lt = 'login-t';

  it('counts failures of a key within the window and forgets older ones', async () => {
    expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(100), at(0))).toBe(1);
    expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(110), at(0))).toBe(2);
    expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(120), at(0))).toBe(3);
    // The window moved past the first two.
    expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(130), at(115))).toBe(2);
    const rows = s.db.prepare('SELECT at FROM login_attempts WHERE tenant_id = ? AND key = ? ORDER BY at').pluck().all(lt, 'account:u1');
    expect(rows).toEqual([at(120), at(130)]); // older rows were pruned
  });

  it('keeps keys apart', async () => {
    expect(await s.loginAttempts.recordFailure(lt, 'ip:10.0.0.1', at(130), at(0))).toBe(1);
    expect(await s.loginAttempts.recordFailure(lt, 'account:u2', at(130), at(0))).toBe(1);
  });

  it('clears one key', async () => {
    await s.loginAttempts.clear(lt, 'account:u1');
    expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(140), at(0))).toBe(1);
    expect(await s.loginAttempts.recordFailure(lt, 'ip:10.0.0.1', at(140), at(0))).toBe(2);
  });

  it('isolates tenants', async () => {
    expect(await s.loginAttempts.recordFailure('login-other', 'account:u1', at(141), at(0))).toBe(1);
    await s.loginAttempts.clear('login-other', 'ip:10.0.0.1');
    expect(await s.loginAttempts.recordFailure(lt, 'ip:10.0.0.1', at(142), at(0))).toBe(3);
  });
});
