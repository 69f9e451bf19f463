/**
 * `npm run bench --backend postgresql` (bench/backend.ts): a migrated scratch database and a Redis
 * key prefix of the run's own, the product's settings for them, the CPU of the database's backends
 * (what the report shows apart from the product's CPU), and the clean-up: the database dropped and
 * the prefix's keys deleted, other keys untouched, close() safe twice.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openBackend } from '../../bench/backend.js';
import { onPgServer } from '../../bench/services.js';
import { PG_SERVER, REDIS_URL } from '../../bench/tenant-fleet.js';
import { productTarget } from '../../bench/targets.js';

const redis = new Redis(REDIS_URL);
afterAll(() => redis.disconnect());

const databaseExists = (name: string) => onPgServer(PG_SERVER, async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1);

describe('bench backend on PostgreSQL + Redis', () => {
  it('gives the product a migrated database and a key prefix of its own, measures the backends, and removes both', async () => {
    const backend = await openBackend('postgresql');
    const { database, redisKeyPrefix } = backend.info;
    expect(backend.info.name).toBe('postgresql');
    expect(database).toMatch(/^svc_bench_[0-9a-f]{12}$/);
    expect(redisKeyPrefix).toMatch(/^svcbench-run-[0-9a-f]{8}$/);
    expect(backend.info.description).toContain(database);
    const other = `svcbench-other-${process.pid}:k`;
    try {
      const env = productTarget({}, backend).spec.env(4000, '/tmp/run');
      expect(env).toMatchObject({ STORAGE_ADAPTER: 'postgresql', REDIS_URL, REDIS_KEY_PREFIX: redisKeyPrefix });
      expect(env.STORAGE_POSTGRESQL_URL).toBe(`${PG_SERVER}/${database}`);
      expect(env.STORAGE_SQLITE_PATH).toBeUndefined();

      // Migrated before the product's first start (the product does not migrate itself).
      const c = new pg.Client({ connectionString: env.STORAGE_POSTGRESQL_URL });
      await c.connect();
      try {
        expect((await c.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0].n).toBeGreaterThan(0);
        const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        // A connection to the run's database is a backend the report counts; its CPU grows with its work.
        const before = await backend.companions!.cpu();
        expect(before.has(pid)).toBe(true);
        await c.query('SELECT sum(i) FROM generate_series(1, 5000000) AS i');
        const after = await backend.companions!.cpu();
        expect(after.get(pid)!).toBeGreaterThan(before.get(pid)!);
      } finally {
        await c.end();
      }

      await redis.set(`${redisKeyPrefix}:a`, '1');
      await redis.set(`${redisKeyPrefix}:b:c`, '1');
      await redis.set(other, '1');
    } finally {
      await backend.close();
    }
    expect(await databaseExists(database!)).toBe(false);
    expect(await redis.exists(`${redisKeyPrefix}:a`, `${redisKeyPrefix}:b:c`)).toBe(0);
    expect(await redis.exists(other)).toBe(1);
    await redis.del(other);
    await expect(backend.close()).resolves.toBeUndefined();
  });
});
