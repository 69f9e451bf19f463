/**
 * The one seeder of the multi-tenant benches (`npm run bench:capacity`, `npm run bench:tenants`):
 * N tenants written through the product's own storage layer (PgStorage as svc_app), each with its
 * registry record, signing keys and one client_credentials client. Bench-only shortcut: the key
 * pairs come from a small pool generated once and shared between tenants, each copy sealed for its
 * own tenant (bench/README.md "Capacity tuning"). Through the tenants API the same fleet takes
 * ~135 ms per tenant (three key pairs generated each), and bench:tenants measures the load, not
 * the set-up.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig, type Config } from '../src/config/index.js';
import { newKeyRecord } from '../src/keys/keystore.js';
import { Sealer } from '../src/keys/sealer.js';
import { newClientRecord } from '../src/clients/operations.js';
import { buildMetadata } from '../src/clients/rules.js';
import { hashSecret, newClientSecret } from '../src/clients/secrets.js';
import { PgStorage } from '../src/storage/postgresql/index.js';
import { REGISTRY_OWNER } from '../src/storage/registry.js';
import type { SigningKeyRecord, TenantRecord } from '../src/storage/types.js';
import { basicAuth } from './http.js';
import { FLEET_SCOPE, type FleetTenant } from './tenant-fleet.js';

/** Key triples generated once and shared by the tenants. */
const KEY_POOL = 16;

export interface SeedReport {
  tenants: FleetTenant[];
  keyPoolSeconds: number;
  /** The tenant records. */
  registrySeconds: number;
  seconds: number;
  keyPool: number;
}

/** A key pair of the pool: the stored record of a throw-away owner and its private JWK in clear. */
interface KeyTemplate {
  record: SigningKeyRecord;
  privateJson: string;
}

async function keyPool(config: Config, sealer: Sealer, size: number): Promise<KeyTemplate[][]> {
  return Promise.all(
    Array.from({ length: size }, async (_, i) => {
      const owner = `keypool-${i}`;
      const records = await Promise.all(config.security.key_store.algorithms.map((alg) => newKeyRecord(alg, sealer, owner)));
      return records.map((record) => ({ record, privateJson: sealer.unseal(record.private_sealed, `${owner}:${record.kid}`) }));
    }),
  );
}

/** Runs fn over items with at most `limit` in flight. */
async function parallel<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * N tenants, each with: its registry record (bound to `_platforms`, as the tenants API writes it),
 * one key of every configured algorithm (a pooled pair sealed for this tenant) and one confidential
 * client_credentials client whose secret is stored hashed as the clients API stores it
 * (buildMetadata for the metadata, hashSecret for the hash). Records go in in batches per
 * transaction; keys and client of a tenant in one transaction of that tenant.
 */
export async function seed(storage: PgStorage, config: Config, sealer: Sealer, n: number, concurrency: number, slugPrefix = 't'): Promise<SeedReport> {
  const t0 = performance.now();
  const pool = await keyPool(config, sealer, Math.min(KEY_POOL, n));
  const keyPoolSeconds = (performance.now() - t0) / 1000;
  const metadata = buildMetadata({ client_name: 'bench cc', grant_types: ['client_credentials'], scope: FLEET_SCOPE }, undefined, config);
  const now = new Date().toISOString();
  const tenants: FleetTenant[] = [];
  const records: TenantRecord[] = [];
  for (let i = 0; i < n; i++) records.push({ id: randomUUID(), slug: `${slugPrefix}${i}`, display_name: `Bench tenant ${i}`, domain: null, status: 'active', created_at: now, updated_at: now });

  // The registry: 250 records per transaction. KeyRepository.transaction is the storage layer's
  // one way to share a transaction between calls; bound to `_platforms` it covers the registry rows.
  // Its advisory lock (one per tenant, here `_platforms`) serialises the batches: one at a time.
  for (let i = 0; i < records.length; i += 250) {
    const batch = records.slice(i, i + 250);
    await storage.keys.transaction(REGISTRY_OWNER, async () => {
      for (const r of batch) await storage.tenants.create(r);
    });
  }
  const registrySeconds = (performance.now() - t0) / 1000 - keyPoolSeconds;

  await parallel(records, concurrency, async (r, i) => {
    const keys = pool[i % pool.length]!.map(({ record, privateJson }) => ({ ...record, created_at: now, private_sealed: sealer.seal(privateJson, `${r.slug}:${record.kid}`) }));
    const secret = newClientSecret();
    const client = newClientRecord(randomBytes(16).toString('base64url'), { secret_hash: hashSecret(secret), secret_sealed: null }, metadata, now);
    await storage.keys.transaction(r.slug, async () => {
      await storage.keys.insert(r.slug, keys);
      await storage.clients.create(r.slug, client);
    });
    tenants[i] = { slug: r.slug, clientId: client.client_id, authorization: basicAuth({ client_id: client.client_id, client_secret: secret }) };
  });
  return { tenants, keyPoolSeconds, registrySeconds, seconds: (performance.now() - t0) / 1000, keyPool: pool.length };
}

/**
 * The whole seeding step of a run: the product's configuration read from the environment the
 * product will get (key algorithms, client rules), its Sealer under that encryption key, a
 * PgStorage on the run's database, `seed`, closed again.
 */
export async function seedFleet(o: { databaseUrl: string; productEnv: Record<string, string>; encryptionKey: string; tenants: number; concurrency: number; slugPrefix?: string }): Promise<SeedReport & { algorithms: string[] }> {
  const config = loadConfig(o.productEnv);
  const sealer = new Sealer(Buffer.from(o.encryptionKey, 'base64'));
  const storage = await PgStorage.open({ url: o.databaseUrl, pool_max: o.concurrency, statement_timeout_ms: 60_000, slow_query_ms: 0 });
  try {
    return { ...(await seed(storage, config, sealer, o.tenants, o.concurrency, o.slugPrefix)), algorithms: [...config.security.key_store.algorithms] };
  } finally {
    await storage.close();
  }
}
