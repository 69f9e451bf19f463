/**
 * Session values at rest (src/oidc/bearer-at-rest.ts) on a real SQLite repository: a session saved
 * again keeps the sealed copy of its value this process made (no new AES-GCM pass per re-save,
 * issue 17), and that reuse never crosses values: another session, a destroyed one, an evicted one
 * and a sealed copy read back from storage (which could have been altered there) all get a seal of
 * their own value. Refresh tokens: found and consumed under the ids of each generation
 * (bearer-at-rest-redis.test.ts: read with their grant).
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Sealer } from '../../src/keys/sealer.js';
import { bearerProtector, FOUND_CACHE_SIZE, protectBearerIds, SEALED_CACHE_SIZE } from '../../src/oidc/bearer-at-rest.js';
import { tokenValue } from '../../src/oidc/user-tokens.js';
import { openSqlite, type Db } from '../../src/storage/sqlite/db.js';
import { SqliteOidcPayloads } from '../../src/storage/sqlite/oidc.js';
import type { OidcPayloadRepository } from '../../src/storage/types.js';

const TENANT = 'default';
const AAD = `oidc-bearer:${TENANT}:Session`;
const exp = () => Math.floor(Date.now() / 1000) + 3600;
const session = (id: string, uid: string) => ({ iat: 1, exp: exp(), jti: id, kind: 'Session', uid, accountId: 'user-1' });

describe('sealed session values', () => {
  let db: Db;
  let raw: SqliteOidcPayloads;
  let repo: OidcPayloadRepository;
  const sealer = new Sealer(randomBytes(32));

  beforeEach(() => {
    db = openSqlite(':memory:');
    raw = new SqliteOidcPayloads(db);
    repo = protectBearerIds(raw, sealer);
  });
  afterEach(() => db.close());

  /** The sealed copy as stored (read under the uid, around the wrapper). */
  const storedSeal = async (uid: string) => {
    const row = await raw.findByUid(TENANT, 'Session', uid);
    return String(row?.payload.jti_sealed);
  };

  it('a session saved again keeps its sealed copy, which unseals to its value and is found by uid', async () => {
    await repo.upsert(TENANT, 'Session', 'sess-a', session('sess-a', 'uid-a'), exp());
    const first = await storedSeal('uid-a');
    await repo.upsert(TENANT, 'Session', 'sess-a', { ...session('sess-a', 'uid-a'), exp: exp() + 60 }, exp() + 60);
    expect(await storedSeal('uid-a')).toBe(first);
    expect(sealer.unseal(first, AAD)).toBe('sess-a');
    expect((await repo.findByUid(TENANT, 'Session', 'uid-a'))?.payload.jti).toBe('sess-a');
    expect((await repo.find(TENANT, 'Session', 'sess-a'))?.payload).not.toHaveProperty('jti_sealed');
  });

  it('never reuses across values: another session, a destroyed one and an evicted one are sealed anew', async () => {
    await repo.upsert(TENANT, 'Session', 'sess-a', session('sess-a', 'uid-a'), exp());
    await repo.upsert(TENANT, 'Session', 'sess-b', session('sess-b', 'uid-b'), exp());
    const a = await storedSeal('uid-a');
    const b = await storedSeal('uid-b');
    expect(b).not.toBe(a);
    expect(sealer.unseal(b, AAD)).toBe('sess-b');

    // Destroyed, then saved again under the same value: a fresh seal (the entry went with the row).
    await repo.destroy(TENANT, 'Session', 'sess-a');
    await repo.upsert(TENANT, 'Session', 'sess-a', session('sess-a', 'uid-a'), exp());
    const again = await storedSeal('uid-a');
    expect(again).not.toBe(a);
    expect(sealer.unseal(again, AAD)).toBe('sess-a');

    // Pushed out by SEALED_CACHE_SIZE newer sessions: sealed anew on its next save, still its own value.
    for (let i = 0; i < SEALED_CACHE_SIZE; i++) await repo.upsert(TENANT, 'Session', `filler-${i}`, session(`filler-${i}`, `uid-f${i}`), exp());
    await repo.upsert(TENANT, 'Session', 'sess-a', session('sess-a', 'uid-a'), exp());
    const evicted = await storedSeal('uid-a');
    expect(evicted).not.toBe(again);
    expect(sealer.unseal(evicted, AAD)).toBe('sess-a');
  });

  it('a sealed copy read from storage is never reused: an altered one is replaced on the next save', async () => {
    // Another process (or a restored backup) wrote this row; its sealed copy names another value.
    const foreign = sealer.seal('someone-else', AAD);
    const key = bearerProtector(sealer).storedId(TENANT, 'Session', 'sess-c');
    expect(key).toMatch(/^h1\./);
    const fresh = protectBearerIds(raw, sealer); // a new process: nothing sealed yet
    await raw.upsert(TENANT, 'Session', key, { ...session('sess-c', 'uid-c'), jti: undefined, jti_sealed: foreign }, exp());
    expect((await fresh.find(TENANT, 'Session', 'sess-c'))?.payload.jti).toBe('sess-c');
    await fresh.upsert(TENANT, 'Session', 'sess-c', session('sess-c', 'uid-c'), exp());
    const seal = await storedSeal('uid-c');
    expect(seal).not.toBe(foreign);
    expect(sealer.unseal(seal, AAD)).toBe('sess-c');
  });
});

describe('refresh tokens found, then consumed (the stored id made once)', () => {
  let db: Db;
  let raw: SqliteOidcPayloads;
  let repo: OidcPayloadRepository;
  const sealer = new Sealer(randomBytes(32));
  const storedId = bearerProtector(sealer).storedId;
  const token = (id: string) => ({ iat: 1, exp: exp(), jti: id, kind: 'RefreshToken', grantId: 'g-1', accountId: 'user-1', clientId: 'c-1' });

  beforeEach(() => {
    db = openSqlite(':memory:');
    raw = new SqliteOidcPayloads(db);
    repo = protectBearerIds(raw, sealer);
  });
  afterEach(() => db.close());

  it('consumes the found row under its hash, and a second presentation sees it consumed', async () => {
    await repo.upsert(TENANT, 'RefreshToken', 'rt-1', token('rt-1'), exp());
    expect((await repo.find(TENANT, 'RefreshToken', 'rt-1'))?.consumed).toBe(false);
    await repo.consume(TENANT, 'RefreshToken', 'rt-1');
    expect((await raw.find(TENANT, 'RefreshToken', storedId(TENANT, 'RefreshToken', 'rt-1')))?.consumed).toBe(true);
    const again = await repo.find(TENANT, 'RefreshToken', 'rt-1');
    expect(again?.consumed).toBe(true);
    expect(again?.payload.jti).toBe('rt-1');
  });

  it('a row from before hashing (under the raw value) is still found and consumed under the raw value', async () => {
    await raw.upsert(TENANT, 'RefreshToken', 'rt-old', token('rt-old'), exp());
    expect((await repo.find(TENANT, 'RefreshToken', 'rt-old'))?.consumed).toBe(false);
    await repo.consume(TENANT, 'RefreshToken', 'rt-old');
    expect((await raw.find(TENANT, 'RefreshToken', 'rt-old'))?.consumed).toBe(true);
    expect((await repo.find(TENANT, 'RefreshToken', 'rt-old'))?.consumed).toBe(true);
  });

  it('a value found in one tenant and consumed in another consumes the other tenant\'s row only', async () => {
    await repo.upsert('tenant-a', 'RefreshToken', 'same', token('same'), exp());
    await repo.upsert('tenant-b', 'RefreshToken', 'same', token('same'), exp());
    await repo.find('tenant-a', 'RefreshToken', 'same');
    await repo.consume('tenant-b', 'RefreshToken', 'same');
    expect((await repo.find('tenant-b', 'RefreshToken', 'same'))?.consumed).toBe(true);
    expect((await repo.find('tenant-a', 'RefreshToken', 'same'))?.consumed).toBe(false);
    // And the tenant's own entry still serves it afterwards.
    await repo.consume('tenant-a', 'RefreshToken', 'same');
    expect((await repo.find('tenant-a', 'RefreshToken', 'same'))?.consumed).toBe(true);
  });

  it('consume and destroy still reach the row when its entry was evicted or never made', async () => {
    const values = Array.from({ length: FOUND_CACHE_SIZE + 2 }, (_, i) => `rt-${i}`);
    for (const v of values) await repo.upsert(TENANT, 'RefreshToken', v, token(v), exp());
    for (const v of values) await repo.find(TENANT, 'RefreshToken', v); // the first two are evicted
    await repo.consume(TENANT, 'RefreshToken', values[0]!);
    expect((await repo.find(TENANT, 'RefreshToken', values[0]!))?.consumed).toBe(true);
    await repo.destroy(TENANT, 'RefreshToken', values[1]!);
    expect(await repo.find(TENANT, 'RefreshToken', values[1]!)).toBeUndefined();
    // Never looked up in this process (another process found it): consumed all the same.
    const other = protectBearerIds(raw, sealer);
    await other.consume(TENANT, 'RefreshToken', values[5]!);
    expect((await repo.find(TENANT, 'RefreshToken', values[5]!))?.consumed).toBe(true);
  });

  it('a refresh token is stored under its time prefix and the keyed hash: ids sort as the values were issued', async () => {
    const values: string[] = [];
    for (let i = 0; i < 40; i++) {
      values.push(tokenValue());
      if (i % 10 === 9) await new Promise((r) => setTimeout(r, 2)); // across milliseconds too
    }
    const ids = values.map((v) => storedId(TENANT, 'RefreshToken', v));
    for (const [i, id] of ids.entries()) {
      expect(id).toMatch(/^h2\.[A-Za-z0-9_-]{8}[A-Za-z0-9_-]{43}$/);
      expect(id.slice(3, 11)).toBe(values[i]!.slice(0, 8));
      expect(id).not.toContain(values[i]!.slice(8, 20));
    }
    // Issued later, stored later in the index: the group commit appends instead of scattering.
    expect([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((id) => id.slice(3, 11))).toEqual(ids.map((id) => id.slice(3, 11)));
    // The hash still binds the whole value: a value sharing the prefix gets another id.
    const twin = values[0]!.slice(0, 8) + values[1]!.slice(8);
    expect(storedId(TENANT, 'RefreshToken', twin)).not.toBe(ids[0]);
    expect(storedId(TENANT, 'RefreshToken', twin).slice(0, 11)).toBe(ids[0]!.slice(0, 11));
  });

  it('a row stored under the plain keyed hash (before ordered ids) is still found, consumed and destroyed', async () => {
    const plain = (v: string) => `h1.${storedId(TENANT, 'RefreshToken', v).slice(11)}`;
    const a = tokenValue();
    const b = tokenValue();
    await raw.upsert(TENANT, 'RefreshToken', plain(a), { ...token(a), jti: undefined }, exp());
    await raw.upsert(TENANT, 'RefreshToken', plain(b), { ...token(b), jti: undefined }, exp());
    const found = await repo.find(TENANT, 'RefreshToken', a);
    expect(found?.consumed).toBe(false);
    expect(found?.payload.jti).toBe(a);
    await repo.consume(TENANT, 'RefreshToken', a);
    expect((await raw.find(TENANT, 'RefreshToken', plain(a)))?.consumed).toBe(true);
    expect((await repo.find(TENANT, 'RefreshToken', a))?.consumed).toBe(true);
    await repo.destroy(TENANT, 'RefreshToken', b);
    expect(await raw.find(TENANT, 'RefreshToken', plain(b))).toBeUndefined();
    expect(await repo.find(TENANT, 'RefreshToken', b)).toBeUndefined();
    // Our own ids are never taken for raw values: a stored id presented as a token finds nothing.
    await repo.upsert(TENANT, 'RefreshToken', a, token(a), exp());
    expect(await repo.find(TENANT, 'RefreshToken', storedId(TENANT, 'RefreshToken', a))).toBeUndefined();
  });
});
