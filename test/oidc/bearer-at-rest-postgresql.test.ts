/**
 * Refresh tokens read with their grant through the bearer-id wrapper (src/oidc/bearer-at-rest.ts
 * findWithGrant) on a real PostgreSQL, whose repository reads both in one statement (issue 17): the
 * row under the current keyed id comes with its grant and is consumed under that id; rows under
 * older ids (the plain keyed hash, the raw value) are found without it; stored ids presented as
 * values and other tenants find nothing. A repository without the method (SQLite, Redis) is
 * wrapped without it, and the token paths read the grant after the token (grant-reads.ts).
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sealer } from '../../src/keys/sealer.js';
import { bearerProtector, protectBearerIds } from '../../src/oidc/bearer-at-rest.js';
import { tokenValue } from '../../src/oidc/user-tokens.js';
import type { PgStorage } from '../../src/storage/postgresql/index.js';
import { RedisOidcPayloads } from '../../src/storage/redis/oidc-payloads.js';
import { openSqlite } from '../../src/storage/sqlite/db.js';
import { SqliteOidcPayloads } from '../../src/storage/sqlite/oidc.js';
import type { OidcPayloadRepository } from '../../src/storage/types.js';
import { migratedDatabase, openPg, type TestDatabase } from '../helpers/postgres.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';

const TENANT = 'default';
const exp = () => Math.floor(Date.now() / 1000) + 3600;

describe('refresh tokens found with their grant (findWithGrant, on a real PostgreSQL)', () => {
  let db: TestDatabase;
  let storage: PgStorage;
  let raw: OidcPayloadRepository;
  let repo: OidcPayloadRepository;
  const sealer = new Sealer(randomBytes(32));
  const storedId = bearerProtector(sealer).storedId;
  const token = (id: string) => ({ iat: 1, exp: exp(), jti: id, kind: 'RefreshToken', grantId: 'g-1', accountId: 'user-1', clientId: 'c-1' });
  const grant = { jti: 'g-1', kind: 'Grant', accountId: 'user-1', clientId: 'c-1' };

  beforeAll(async () => {
    db = await migratedDatabase();
    storage = await openPg(db.url);
    raw = storage.oidc;
    repo = protectBearerIds(raw, sealer);
    await raw.upsert(TENANT, 'Grant', 'g-1', grant, exp());
  });
  afterAll(async () => {
    await storage?.close();
    await db?.drop();
  });

  it('finds a token under its keyed id with its grant, puts its value back, and consumes that row', async () => {
    const value = tokenValue();
    await repo.upsert(TENANT, 'RefreshToken', value, token(value), exp());
    const found = await repo.findWithGrant!(TENANT, 'RefreshToken', value);
    expect(found?.row.payload.jti).toBe(value);
    expect(found?.grant).toEqual({ id: 'g-1', row: { payload: grant, expires_at: expect.any(Number), consumed: false } });
    await repo.consume(TENANT, 'RefreshToken', value);
    expect((await raw.find(TENANT, 'RefreshToken', storedId(TENANT, 'RefreshToken', value)))?.consumed).toBe(true);
    expect((await repo.findWithGrant!(TENANT, 'RefreshToken', value))?.row.consumed).toBe(true);
  });

  it('rows under older ids are found without their grant (the caller reads it); a stored id presented finds nothing', async () => {
    const value = tokenValue();
    const plain = `h1.${storedId(TENANT, 'RefreshToken', value).slice(11)}`;
    await raw.upsert(TENANT, 'RefreshToken', plain, { ...token(value), jti: undefined }, exp());
    await raw.upsert(TENANT, 'RefreshToken', 'rt-raw', token('rt-raw'), exp());
    expect(await repo.findWithGrant!(TENANT, 'RefreshToken', value)).toEqual({ row: { payload: token(value), expires_at: expect.any(Number), consumed: false } });
    expect((await repo.findWithGrant!(TENANT, 'RefreshToken', 'rt-raw'))?.row.payload.jti).toBe('rt-raw');
    expect(await repo.findWithGrant!(TENANT, 'RefreshToken', plain)).toBeUndefined();
    await repo.upsert(TENANT, 'RefreshToken', value, token(value), exp());
    expect(await repo.findWithGrant!(TENANT, 'RefreshToken', storedId(TENANT, 'RefreshToken', value))).toBeUndefined();
    // Another tenant's value finds nothing, and its grant is never read.
    expect(await repo.findWithGrant!('other-tenant', 'RefreshToken', value)).toBeUndefined();
  });

  it('a repository without findWithGrant (SQLite, Redis) is wrapped without one', async () => {
    const sqlite = openSqlite(':memory:');
    expect(protectBearerIds(new SqliteOidcPayloads(sqlite), sealer).findWithGrant).toBeUndefined();
    sqlite.close();
    const redis = new Redis(SHARED_REDIS_URL);
    expect(protectBearerIds(new RedisOidcPayloads(redis, { prefix: uniquePrefix('bearer-wg') }), sealer).findWithGrant).toBeUndefined();
    await redis.quit();
  });
});
