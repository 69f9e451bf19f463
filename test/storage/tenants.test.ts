/**
 * TenantRepository on both backends (SQLite and a PostgreSQL database of its own): the registry
 * CRUD with its unique slug and domain, status filter and cursor order, and delete purging the
 * tenant's data — only that tenant's, and nothing for an unknown slug.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UniqueViolation } from '../../src/storage/errors.js';
import { REGISTRY_OWNER } from '../../src/storage/registry.js';
import type { PageRequest, Storage, TenantRecord } from '../../src/storage/types.js';
import { migratedDatabase, openPg, type TestDatabase } from '../helpers/postgres.js';
import { clientRecord, keyRecord, openTempStorage, type TempStorage } from '../helpers/storage.js';

const page = (over: Partial<PageRequest> = {}): PageRequest => ({ limit: 25, include_count: false, ...over });
let seq = 0;
function tenant(slug: string, over: Partial<TenantRecord> = {}): TenantRecord {
  seq++;
  const at = new Date(Date.UTC(2024, 0, 1, 0, 0, seq)).toISOString();
  return { id: `t-${String(seq).padStart(3, '0')}`, slug, display_name: slug, domain: null, status: 'active', created_at: at, updated_at: at, ...over };
}

function describeTenants(name: string, open: () => Promise<{ storage: Storage; rowsOf(table: string, tenant: string): Promise<number>; close(): Promise<void> }>) {
  describe(`tenant registry: ${name}`, () => {
    let backend: Awaited<ReturnType<typeof open>>;
    let s: Storage;
    beforeAll(async () => {
      backend = await open();
      s = backend.storage;
    });
    afterAll(async () => backend?.close());

    it('creates, reads, updates and refuses a duplicate slug or domain', async () => {
      const acme = tenant('acme', { domain: 'login.acme.example.com' });
      await s.tenants.create(acme);
      expect(await s.tenants.get('acme')).toEqual(acme);
      expect(await s.tenants.get('nobody')).toBeUndefined();
      await expect(s.tenants.create(tenant('acme'))).rejects.toEqual(new UniqueViolation('slug'));
      await expect(s.tenants.create(tenant('other', { domain: 'login.acme.example.com' }))).rejects.toEqual(new UniqueViolation('domain'));
      expect(await s.tenants.get('other')).toBeUndefined();

      const updated = await s.tenants.update('acme', { status: 'suspended', display_name: 'Acme Inc.', domain: null });
      expect(updated).toMatchObject({ slug: 'acme', status: 'suspended', display_name: 'Acme Inc.', domain: null });
      expect(updated!.updated_at > acme.updated_at).toBe(true);
      expect(await s.tenants.update('nobody', { status: 'active' })).toBeUndefined();
      await s.tenants.create(tenant('beta', { domain: 'login.beta.example.com' }));
      await expect(s.tenants.update('acme', { domain: 'login.beta.example.com' })).rejects.toEqual(new UniqueViolation('domain'));
    });

    it('creates several tenants in one registry transaction (each creation leaves it bound to the registry)', async () => {
      await s.keys.transaction(REGISTRY_OWNER, async () => {
        for (const slug of ['tx-1', 'tx-2', 'tx-3']) await s.tenants.create(tenant(slug));
      });
      for (const slug of ['tx-1', 'tx-2', 'tx-3']) expect((await s.tenants.get(slug))?.slug).toBe(slug);
      for (const slug of ['tx-1', 'tx-2', 'tx-3']) await s.tenants.delete(slug);
    });

    it('lists in creation order with cursors, a status filter and a count', async () => {
      for (const slug of ['l1', 'l2', 'l3']) await s.tenants.create(tenant(slug, { status: slug === 'l2' ? 'suspended' : 'active' }));
      const all = await s.tenants.list({}, page({ include_count: true }));
      expect(all.items.map((t) => t.slug)).toEqual(['acme', 'beta', 'l1', 'l2', 'l3']);
      expect(all.total_count).toBe(5);
      const first = await s.tenants.list({}, page({ limit: 2 }));
      expect(first.has_more).toBe(true);
      const last = first.items[1]!;
      const next = await s.tenants.list({}, page({ limit: 2, after: { created_at: last.created_at, id: last.id } }));
      expect(next.items.map((t) => t.slug)).toEqual(['l1', 'l2']);
      const suspended = await s.tenants.list({ status: 'suspended' }, page({ include_count: true }));
      expect(suspended.items.map((t) => t.slug)).toEqual(['acme', 'l2']);
      expect(suspended.total_count).toBe(2);
    });

    it('searches slug, display name and domain case-insensitively, wildcards literal, with the status filter, cursors and count', async () => {
      await s.tenants.create(tenant('q-north', { display_name: 'Northwind Traders', domain: 'login.northwind.example' }));
      await s.tenants.create(tenant('q-south', { display_name: '100%_Pure Ltd', status: 'suspended' }));
      await s.tenants.create(tenant('q-east', { display_name: 'Überall East\\Side', domain: 'sso.eastern.example' }));
      await s.tenants.create(tenant('q-percent', { display_name: '100 Pure Ltd' }));
      const slugs = async (q: string, status?: TenantRecord['status'], over: Partial<PageRequest> = {}) => (await s.tenants.list({ q, status }, page(over))).items.map((t) => t.slug);
      expect(await slugs('q-')).toEqual(['q-north', 'q-south', 'q-east', 'q-percent']);
      expect(await slugs('NORTHWIND')).toEqual(['q-north']); // display name and domain
      expect(await slugs('wind trad')).toEqual(['q-north']);
      expect(await slugs('EASTERN.example')).toEqual(['q-east']); // domain only
      expect(await slugs('Q-SOUTH')).toEqual(['q-south']); // slug
      // LIKE wildcards and the escape character match themselves only.
      expect(await slugs('100%_')).toEqual(['q-south']);
      expect(await slugs('%')).toEqual(['q-south']);
      expect(await slugs('_')).toEqual(['q-south']);
      expect(await slugs('t\\s')).toEqual(['q-east']);
      expect(await slugs('\\%')).toEqual([]);
      // Case folding is ASCII-only on both backends (as the users and clients lists): the same answers.
      expect(await slugs('berall')).toEqual(['q-east']);
      expect(await slugs('Überall')).toEqual(['q-east']);
      expect(await slugs('überall')).toEqual([]);
      expect(await slugs('q-', 'suspended')).toEqual(['q-south']);
      expect(await slugs('nothing like it')).toEqual([]);
      const counted = await s.tenants.list({ q: 'q-' }, page({ limit: 2, include_count: true }));
      expect(counted.items.map((t) => t.slug)).toEqual(['q-north', 'q-south']);
      expect([counted.has_more, counted.total_count]).toEqual([true, 4]);
      const last = counted.items[1]!;
      expect(await slugs('q-', undefined, { limit: 2, after: { created_at: last.created_at, id: last.id } })).toEqual(['q-east', 'q-percent']);
      for (const t of ['q-north', 'q-south', 'q-east', 'q-percent']) expect(await s.tenants.delete(t)).toBe(true);
    });

    it('deletes the record and purges that tenant’s data only; an unknown slug purges nothing', async () => {
      for (const t of ['gone', 'kept']) {
        if (t === 'gone') await s.tenants.create(tenant('gone'));
        await s.clients.create(t, clientRecord(`c-${t}`));
        await s.keys.insert(t, [keyRecord(`k-${t}`)]);
      }
      await s.clients.create('default', clientRecord('c-default'));
      expect(await s.tenants.delete('gone')).toBe(true);
      expect(await s.tenants.get('gone')).toBeUndefined();
      expect(await backend.rowsOf('clients', 'gone')).toBe(0);
      expect(await backend.rowsOf('signing_keys', 'gone')).toBe(0);
      expect(await backend.rowsOf('clients', 'kept')).toBe(1);
      expect(await backend.rowsOf('signing_keys', 'kept')).toBe(1);
      // `default` is never a record: deleting it is a no-op that leaves its data alone.
      expect(await s.tenants.delete('default')).toBe(false);
      expect(await s.tenants.delete('gone')).toBe(false);
      expect(await backend.rowsOf('clients', 'default')).toBe(1);
      await expect(s.tenants.delete('_platforms')).rejects.toThrow(/cannot be deleted/);
    });

    it('creates a slug empty: rows a deleted tenant of that slug left behind go with the new record, and a refused create purges nothing', async () => {
      await s.tenants.create(tenant('reborn'));
      expect(await s.tenants.delete('reborn')).toBe(true);
      // A write that raced the deletion and committed after its purge.
      await s.clients.create('reborn', clientRecord('c-late'));
      await s.keys.insert('reborn', [keyRecord('k-late')]);
      await s.tenants.create(tenant('reborn'));
      expect(await backend.rowsOf('clients', 'reborn')).toBe(0);
      expect(await backend.rowsOf('signing_keys', 'reborn')).toBe(0);
      // A create refused as a duplicate leaves the live tenant's data alone.
      await s.clients.create('reborn', clientRecord('c-live'));
      await expect(s.tenants.create(tenant('reborn'))).rejects.toEqual(new UniqueViolation('slug'));
      expect(await backend.rowsOf('clients', 'reborn')).toBe(1);
    });
  });
}

describeTenants('sqlite', async () => {
  const temp: TempStorage = openTempStorage();
  return {
    storage: temp.storage,
    rowsOf: async (table, t) => temp.storage.db.prepare(`SELECT count(*) FROM ${table} WHERE tenant_id = ?`).pluck().get(t) as number,
    close: () => temp.close(),
  };
});

describeTenants('postgresql', async () => {
  const db: TestDatabase = await migratedDatabase();
  const storage = await openPg(db.url);
  const admin = await db.admin();
  return {
    storage,
    // As postgres (superuser): the ground truth, whatever row-level security lets the service see.
    rowsOf: async (table, t) => Number((await admin.query(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = $1`, [t])).rows[0].n),
    close: async () => {
      // The registry's rows belong to `_platforms`, whatever tenant they describe.
      const owners = await admin.query('SELECT DISTINCT tenant_id FROM tenants');
      expect(owners.rows).toEqual([{ tenant_id: '_platforms' }]);
      await storage.close();
      await admin.end();
      await db.drop();
    },
  };
});
