/**
 * The token paths' users in memory on PostgreSQL (src/storage/postgresql/user-cache.ts): served
 * only while the listening connection proves it hears the database's change notices, evicted by
 * every writer's change (another connection standing for another instance, the CLI or psql), by
 * this instance's own writes at once, and never kept from a read that a change overtook.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PgStorage } from '../../src/storage/postgresql/index.js';
import { poolConfig } from '../../src/storage/postgresql/pool.js';
import { PgUserCache, USER_CHANNEL } from '../../src/storage/postgresql/user-cache.js';
import type { UserRecord, UserWithoutSecrets } from '../../src/storage/types.js';
import { migratedDatabase, openPg, pgSettings, type TestDatabase } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

const T = 'cache-t';
const OTHER = 'cache-other';

let db: TestDatabase;
let admin: pg.Client;
let storage: PgStorage;
const opened: Array<{ close(): Promise<void> }> = [];

let seq = 0;
function user(over: Partial<UserRecord> = {}): UserRecord {
  seq++;
  const now = new Date().toISOString();
  return {
    id: `u-${seq}`, email: `u${seq}@example.com`, email_verified: true, username: null, given_name: null, family_name: null,
    name: `User ${seq}`, nickname: null, role: 'user', account_enabled: true, locked: false, locked_until: null,
    auth_provider: 'local', password_hash: '$argon2id$secret-hash', mfa_enabled: true, mfa_methods: ['totp'],
    mfa_secret_sealed: 'sealed-secret', mfa_recovery_sealed: 'sealed-codes', deleted_at: null,
    created_at: now, updated_at: now, last_login_at: null, ...over,
  };
}


/** A cache on its own connection whose reads the test counts (and may hold back). */
function countingCache(over: Partial<ConstructorParameters<typeof PgUserCache>[0]> = {}) {
  const reads: string[] = [];
  /** Reads that have their row (and may be held at the gate). */
  const fetched: string[] = [];
  let gate: Promise<void> | undefined;
  const cache = new PgUserCache({
    client: poolConfig(pgSettings(db.url)),
    read: async (tenant, id) => {
      reads.push(`${tenant}/${id}`);
      const found = await storage.users.readForToken(tenant, id);
      fetched.push(`${tenant}/${id}`);
      if (gate) await gate;
      return found;
    },
    heartbeatMs: 100,
    ...over,
  });
  opened.push(cache);
  cache.start();
  /** Holds every read that has its row at a gate until the function returned is called. */
  const hold = (): (() => void) => {
    let open!: () => void;
    gate = new Promise<void>((r) => (open = r));
    return () => {
      gate = undefined;
      open();
    };
  };
  return { cache, reads, fetched, hold };
}

/** A counting cache, live, holding one user just created. */
async function servingOne() {
  const counted = countingCache();
  const u = user();
  await storage.users.create(T, u);
  await until(() => counted.cache.serving);
  await counted.cache.get(T, u.id);
  expect(counted.cache.size).toBe(1);
  return { ...counted, u };
}

/** The backend id of the cache's listening connection (it runs the heartbeat's pg_notify). */
async function listenerPids(): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%pg_notify%'",
  );
  return rows.map((r) => r.pid);
}

beforeAll(async () => {
  db = await migratedDatabase();
  admin = await db.admin();
  storage = await openPg(db.url);
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});
afterAll(async () => {
  await storage?.close();
  await admin?.end();
  await db?.drop();
});

describe('the token paths\' users on PostgreSQL', () => {
  it('the storage serves them from memory once its listener hears its own heartbeat, without the secrets', async () => {
    const u = user();
    await storage.users.create(T, u);
    expect(storage.userCache).toBeDefined();
    await until(() => storage.userCache!.serving);
    const first = await storage.users.getForToken(T, u.id);
    expect(first).toMatchObject({ id: u.id, name: u.name, mfa_methods: ['totp'], account_enabled: true });
    for (const secret of ['password_hash', 'mfa_secret_sealed', 'mfa_recovery_sealed']) expect(first).not.toHaveProperty(secret);
    const size = storage.userCache!.size;
    expect(size).toBeGreaterThan(0);
    // Served again from memory: the same frozen object, which no caller can alter for the next.
    const again = await storage.users.getForToken(T, u.id);
    expect(again).toBe(await storage.users.getForToken(T, u.id));
    expect(Object.isFrozen(again)).toBe(true);
    expect(() => {
      (again as { role: string }).role = 'admin';
    }).toThrow(TypeError);
    expect(() => again!.mfa_methods.push('webauthn')).toThrow(TypeError);
  });

  it('a change committed by another writer (psql, the CLI, another instance) evicts the user', async () => {
    const { cache, reads } = countingCache();
    const u = user();
    await storage.users.create(T, u);
    await until(() => cache.serving);
    await cache.get(T, u.id);
    await cache.get(T, u.id);
    expect(reads).toEqual([`${T}/${u.id}`]);

    await admin.query('UPDATE users SET account_enabled = false WHERE tenant_id = $1 AND id = $2', [T, u.id]);
    await until(async () => (await cache.get(T, u.id))?.account_enabled === false, 2000);
    expect(reads).toEqual([`${T}/${u.id}`, `${T}/${u.id}`]);

    await admin.query("UPDATE users SET name = 'Renamed' WHERE tenant_id = $1 AND id = $2", [T, u.id]);
    await until(async () => (await cache.get(T, u.id))?.name === 'Renamed', 2000);

    await admin.query('DELETE FROM users WHERE tenant_id = $1 AND id = $2', [T, u.id]);
    await until(async () => (await cache.get(T, u.id)) === undefined, 2000);
  });

  it('a notice evicts only its own tenant\'s user; TRUNCATE evicts everyone', async () => {
    const { cache, reads } = countingCache();
    const u = user();
    await storage.users.create(T, u);
    await storage.users.create(OTHER, { ...u, email: 'other@example.com' });
    await until(() => cache.serving);
    await cache.get(T, u.id);
    await cache.get(OTHER, u.id);
    await admin.query("UPDATE users SET name = 'Only here' WHERE tenant_id = $1 AND id = $2", [OTHER, u.id]);
    await until(async () => (await cache.get(OTHER, u.id))?.name === 'Only here', 2000);
    expect((await cache.get(T, u.id))?.name).toBe(u.name);
    expect(reads.filter((r) => r === `${T}/${u.id}`)).toHaveLength(1);
    // Another tenant's id never answers for this tenant (row-level security and the key agree).
    expect(await cache.get('cache-nobody', u.id)).toBeUndefined();

    const truncated = user();
    await storage.users.create(T, truncated);
    await cache.get(T, truncated.id);
    await admin.query('TRUNCATE users CASCADE');
    await until(async () => (await cache.get(T, truncated.id)) === undefined, 2000);
    expect(await cache.get(T, u.id)).toBeUndefined();
  });

  it('a notice it cannot read (anyone who may NOTIFY the channel) empties the memory rather than being ignored', async () => {
    const { cache, u } = await servingOne();
    for (const payload of ['not json', '["only-one"]', '[1, 2]', '{"tenant": "x"}', `heartbeat forged 1`]) {
      await cache.get(T, u.id);
      await admin.query('SELECT pg_notify($1, $2)', [USER_CHANNEL, payload]);
      if (payload.startsWith('heartbeat')) continue;
      await until(() => cache.size === 0, 2000);
    }
    // A forged heartbeat is not this instance's own: ignored, the memory and its state stay.
    await new Promise((r) => setTimeout(r, 250));
    expect(cache.size).toBe(1);
    expect(cache.serving).toBe(true);
  });

  it('this instance\'s own write evicts before its caller is answered, with no wait for the notice', async () => {
    const u = user();
    await storage.users.create(T, u);
    await until(() => storage.userCache!.serving);
    expect((await storage.users.getForToken(T, u.id))?.locked).toBe(false);
    await storage.users.update(T, u.id, { locked: true });
    expect((await storage.users.getForToken(T, u.id))?.locked).toBe(true);
    await storage.users.update(T, u.id, { account_enabled: false, locked: false });
    expect(await storage.users.getForToken(T, u.id)).toMatchObject({ account_enabled: false, locked: false });
  });

  it('every write of the repository evicts, committed or refused, and the caller is answered after it', async () => {
    const plain = await PgStorage.open({ ...pgSettings(db.url), user_cache: false });
    opened.push(plain);
    const evicted: string[] = [];
    plain.users.useCache({ evict: (tenant: string, id: string) => evicted.push(`${tenant}/${id}`), get: (tenant: string, id: string) => plain.users.readForToken(tenant, id) } as unknown as PgUserCache);
    const a = user();
    const b = user();
    await plain.users.create(T, a);
    await plain.users.create(T, b);
    const updating = plain.users.update(T, a.id, { name: 'New' });
    expect(evicted).toEqual([]);
    await updating;
    expect(evicted).toEqual([`${T}/${a.id}`]);
    // A refused write (b takes a's e-mail) evicts too: nothing is assumed about what happened.
    await expect(plain.users.update(T, b.id, { email: a.email })).rejects.toThrow();
    expect(evicted).toEqual([`${T}/${a.id}`, `${T}/${b.id}`]);
  });

  it('requests for a user being read join that read: one statement, one miss', async () => {
    const { cache, reads, hold } = countingCache();
    const u = user();
    await storage.users.create(T, u);
    await until(() => cache.serving);
    const open = hold();
    const before = cache.stats();
    const [a, b, c] = [cache.get(T, u.id), cache.get(T, u.id), cache.get(T, u.id)];
    open();
    expect((await Promise.all([a, b, c])).map((x) => x?.id)).toEqual([u.id, u.id, u.id]);
    expect(reads).toEqual([`${T}/${u.id}`]);
    expect(cache.stats()).toMatchObject({ misses: before.misses + 1, hits: before.hits });
    await cache.get(T, u.id);
    expect(cache.stats()).toMatchObject({ misses: before.misses + 1, hits: before.hits + 1 });
  });

  it('a read that a change overtook is answered but not kept', async () => {
    const { cache, fetched, hold } = countingCache();
    const u = user();
    await storage.users.create(T, u);
    await until(() => cache.serving);
    const open = hold();
    // The read has its (old) row and waits; meanwhile the row changes and the notice arrives.
    const inFlight = cache.get(T, u.id);
    await until(() => fetched.length === 1);
    await admin.query('UPDATE users SET account_enabled = false WHERE tenant_id = $1 AND id = $2', [T, u.id]);
    // The notice has arrived once the held read is no longer the one a new request would join.
    const inFlightReads = (cache as unknown as { inFlight: Map<string, unknown> }).inFlight;
    await until(() => inFlightReads.size === 0, 2000);
    open();
    expect((await inFlight)?.account_enabled).toBe(true);
    // Not kept: the next read goes to the database and sees the change.
    expect((await cache.get(T, u.id))?.account_enabled).toBe(false);
  });

  it('while its listener is gone nothing is served from memory; back, it starts empty', async () => {
    const errors: Error[] = [];
    const { cache, reads } = countingCache({ onError: (err) => errors.push(err) });
    const u = user();
    await storage.users.create(T, u);
    await until(() => cache.serving);
    await cache.get(T, u.id);
    await until(async () => (await listenerPids()).length > 0);
    // The server ends the listening connection (a restart, a failover, an operator's kill).
    const pids = await listenerPids();
    await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
    await until(() => !cache.serving, 2000);
    expect(errors.length).toBeGreaterThan(0);
    // Meanwhile every read goes to the database, and so sees a change whose notice nobody heard.
    const before = reads.length;
    await admin.query("UPDATE users SET name = 'Changed while deaf' WHERE tenant_id = $1 AND id = $2", [T, u.id]);
    if (!cache.serving) {
      expect((await cache.get(T, u.id))?.name).toBe('Changed while deaf');
      expect(reads.length).toBe(before + 1);
    }
    // It reconnects by itself, and serves again from an empty memory.
    await until(() => cache.serving, 5000);
    expect(cache.size).toBe(0);
    expect((await cache.get(T, u.id))?.name).toBe('Changed while deaf');
  });

  it('a listener whose notices stop arriving (a pooler, a half-open socket) stops serving within two heartbeats', async () => {
    const { cache, u } = await servingOne();
    // The connection stays up and answers queries, but hears nothing any more.
    await (cache as unknown as { client: pg.Client }).client.query(`UNLISTEN ${USER_CHANNEL}`);
    await until(() => !cache.serving, 1000);
    expect(cache.size).toBe(0);
    await admin.query("UPDATE users SET name = 'Unheard' WHERE tenant_id = $1 AND id = $2", [T, u.id]);
    expect((await cache.get(T, u.id))?.name).toBe('Unheard');
    expect(cache.size).toBe(0);
  });

  it('is off with user_cache = false: no listener, every read from the database', async () => {
    const plain = await PgStorage.open({ ...pgSettings(db.url), user_cache: false });
    opened.push(plain);
    expect(plain.userCache).toBeUndefined();
    const u = user();
    await plain.users.create(T, u);
    const read: UserWithoutSecrets | undefined = await plain.users.getForToken(T, u.id);
    expect(read).toMatchObject({ id: u.id });
    await admin.query("UPDATE users SET name = 'Direct' WHERE tenant_id = $1 AND id = $2", [T, u.id]);
    expect((await plain.users.getForToken(T, u.id))?.name).toBe('Direct');
  });
});
