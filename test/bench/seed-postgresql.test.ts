/**
 * The multi-tenant benches' seeder (bench/seed.ts, `npm run bench:capacity`, `npm run bench:tenants`)
 * on a migrated PostgreSQL database of its own: the registry records go in 250 to a transaction, and
 * each tenant gets its keys and one client_credentials client. It broke silently once: a tenant's
 * creation left its transaction bound to the new slug, so the second record of a batch was refused
 * by row-level security (src/storage/postgresql/tenants.ts purgeData).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seed } from '../../bench/seed.js';
import { loadConfig } from '../../src/config/index.js';
import { Sealer } from '../../src/keys/sealer.js';
import type { PgStorage } from '../../src/storage/postgresql/index.js';
import { migratedDatabase, openPg, type TestDatabase } from '../helpers/postgres.js';

let db: TestDatabase;
let storage: PgStorage;

beforeAll(async () => {
  db = await migratedDatabase();
  storage = await openPg(db.url, { pool_max: 8 });
});
afterAll(async () => {
  await storage?.close();
  await db?.drop();
});

describe('bench seed', () => {
  it('seeds more tenants than one registry batch holds, each with its keys and client', async () => {
    const config = loadConfig({ NODE_ENV: 'test', SVC_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64') });
    const sealer = new Sealer(Buffer.alloc(32, 3));
    const report = await seed(storage, config, sealer, 260, 8, 'seedt');
    expect(report.tenants).toHaveLength(260);
    const registry = await storage.tenants.list({}, { limit: 100, include_count: true });
    expect(registry.total_count).toBe(260);
    for (const i of [0, 249, 250, 259]) {
      const t = report.tenants[i]!;
      expect(t.slug).toBe(`seedt${i}`);
      expect((await storage.tenants.get(t.slug))?.status).toBe('active');
      expect((await storage.keys.list(t.slug)).map((k) => k.alg).sort()).toEqual([...config.security.key_store.algorithms].sort());
      expect((await storage.clients.get(t.slug, t.clientId))?.metadata.grant_types).toEqual(['client_credentials']);
    }
  });
});
