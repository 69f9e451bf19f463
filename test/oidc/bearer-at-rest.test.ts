/**
 * Session values at rest (src/oidc/bearer-at-rest.ts) on a real SQLite repository: a session saved
 * again keeps the sealed copy of its value this process made (no new AES-GCM pass per re-save,
 * issue 17), and that reuse never crosses values: another session, a destroyed one, an evicted one
 * and a sealed copy read back from storage (which could have been altered there) all get a seal of
 * their own value.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Sealer } from '../../src/keys/sealer.js';
import { bearerProtector, protectBearerIds, SEALED_CACHE_SIZE } from '../../src/oidc/bearer-at-rest.js';
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
