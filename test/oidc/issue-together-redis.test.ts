/**
 * The refresh grant's and the code exchange's write step (src/oidc/issue-together.ts, issue 17):
 * on Redis one script consumes the presented artefact and writes the new tokens only when that
 * consume was its own (RedisOidcPayloads.consumeAndUpsert), through the bearer-id wrapper
 * (refresh tokens under their keyed ids) as the token paths call it; on SQLite one write of the
 * group commit; on a store without the method the consume and the upserts go side by side. A
 * silent authorization's code and session re-save go the same way (upsertTogether: one script on
 * Redis, one write on SQLite). Real Redis, real SQLite.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Sealer } from '../../src/keys/sealer.js';
import { bearerProtector, protectBearerIds } from '../../src/oidc/bearer-at-rest.js';
import { consumeAndUpsert, upsertTogether } from '../../src/oidc/issue-together.js';
import { tokenValue } from '../../src/oidc/user-tokens.js';
import { RedisOidcPayloads } from '../../src/storage/redis/oidc-payloads.js';
import { consumeAndIssueScript, consumeAndUpsertScript, GRANT_PRUNE } from '../../src/storage/redis/oidc-scripts.js';
import { openSqlite } from '../../src/storage/sqlite/db.js';
import { SqliteOidcPayloads } from '../../src/storage/sqlite/oidc.js';
import type { OidcUpsert } from '../../src/storage/types.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';

const nowSec = () => Math.floor(Date.now() / 1000);
const exp = () => nowSec() + 3600;
const prefix = uniquePrefix('issue-together');
const key = (tenant: string, rest: string) => `${prefix}:${tenant}:${rest}`;
const refresh = (jti: string, grantId = 'g-1') => ({ iat: nowSec(), exp: exp(), jti, kind: 'RefreshToken', grantId, accountId: 'user-1', clientId: 'c-1' });
const access = (jti: string, grantId = 'g-1') => ({ iat: nowSec(), exp: exp(), jti, kind: 'AccessToken', grantId, accountId: 'user-1', clientId: 'c-1' });
/** The successor refresh token and the access token of one rotation. */
const rotation = (rt: string, at: string, grantId = 'g-1'): OidcUpsert[] => [
  { model: 'RefreshToken', id: rt, payload: refresh(rt, grantId), expiresAt: exp() },
  { model: 'AccessToken', id: at, payload: access(at, grantId), expiresAt: exp() },
];

let redis: Redis;
let raw: RedisOidcPayloads;

beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL);
  raw = new RedisOidcPayloads(redis, { prefix });
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
});

describe('RedisOidcPayloads.consumeAndUpsert: one script', () => {
  const t = 'script';

  it('consumes the used artefact and writes the new ones with their index entries', async () => {
    await raw.upsert(t, 'AuthorizationCode', 'code-1', { grantId: 'g-1' }, exp());
    expect(await raw.consumeAndUpsert(t, { model: 'AuthorizationCode', id: 'code-1' }, rotation('rt-1', 'at-1'))).toBe(true);
    expect((await raw.find(t, 'AuthorizationCode', 'code-1'))?.consumed).toBe(true);
    expect((await raw.find(t, 'RefreshToken', 'rt-1'))?.payload).toEqual(refresh('rt-1'));
    expect(await raw.find(t, 'AccessToken', 'at-1')).toMatchObject({ consumed: false, payload: { jti: 'at-1' } });
    expect(await redis.smembers(key(t, 'oidx:grant:g-1'))).toEqual(expect.arrayContaining(['AuthorizationCode:code-1', 'RefreshToken:rt-1', 'AccessToken:at-1']));
    expect(await redis.expiretime(key(t, 'oidc:RefreshToken:rt-1'))).toBe((await raw.find(t, 'RefreshToken', 'rt-1'))?.expires_at);
    // The grant's revocation takes the new tokens with it.
    await raw.revokeByGrantId(t, 'g-1');
    expect(await raw.find(t, 'RefreshToken', 'rt-1')).toBeUndefined();
    expect(await raw.find(t, 'AccessToken', 'at-1')).toBeUndefined();
  });

  it('a replay, an unknown artefact and another tenant\'s: false, and nothing written or created', async () => {
    await raw.upsert(t, 'RefreshToken', 'rt-used', refresh('rt-used', 'g-2'), exp());
    expect(await raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-used' }, rotation('rt-a', 'at-a', 'g-2'))).toBe(true);
    expect(await raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-used' }, rotation('rt-b', 'at-b', 'g-2'))).toBe(false);
    expect(await raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-nope' }, rotation('rt-c', 'at-c', 'g-2'))).toBe(false);
    expect(await raw.consumeAndUpsert(`${t}-other`, { model: 'RefreshToken', id: 'rt-used' }, rotation('rt-d', 'at-d', 'g-2'))).toBe(false);
    for (const [tenant, id] of [[t, 'rt-b'], [t, 'rt-c'], [`${t}-other`, 'rt-d'], [t, 'rt-nope'], [`${t}-other`, 'rt-used']] as const) {
      expect(await raw.find(tenant, 'RefreshToken', id), `${tenant} ${id}`).toBeUndefined();
    }
    expect(await raw.find(t, 'AccessToken', 'at-b')).toBeUndefined();
    expect(await redis.smembers(key(t, 'oidx:grant:g-2'))).toEqual(expect.arrayContaining(['RefreshToken:rt-used', 'RefreshToken:rt-a', 'AccessToken:at-a']));
    expect(await redis.scard(key(t, 'oidx:grant:g-2'))).toBe(3);
    expect(await redis.exists(key(`${t}-other`, 'oidx:grant:g-2'))).toBe(0);
  });

  it('the same artefact presented eight times at once: one call consumes it, only its tokens exist', async () => {
    await raw.upsert(t, 'RefreshToken', 'rt-race', refresh('rt-race', 'g-3'), exp());
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-race' }, rotation(`rt-race-${i}`, `at-race-${i}`, 'g-3'))));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    for (let i = 0; i < 8; i++) {
      expect(Boolean(await raw.find(t, 'RefreshToken', `rt-race-${i}`)), `call ${i}`).toBe(i === winner);
      expect(Boolean(await raw.find(t, 'AccessToken', `at-race-${i}`)), `call ${i}`).toBe(i === winner);
    }
  });

  it('an expired row to write is not stored (as upsert)', async () => {
    await raw.upsert(t, 'AuthorizationCode', 'code-exp', { grantId: 'g-4' }, exp());
    const rows: OidcUpsert[] = [{ model: 'AccessToken', id: 'at-dead', payload: access('at-dead', 'g-4'), expiresAt: nowSec() - 1 }];
    expect(await raw.consumeAndUpsert(t, { model: 'AuthorizationCode', id: 'code-exp' }, rows)).toBe(true);
    expect(await redis.exists(key(t, 'oidc:AccessToken:at-dead'))).toBe(0);
  });

  it('new tokens take the short script (consumeAndIssueScript), a record that exists already the general one', async () => {
    await raw.upsert(t, 'RefreshToken', 'rt-count', refresh('rt-count', 'g-5'), exp());
    await raw.upsert(t, 'AccessToken', 'at-count-0', access('at-count-0', 'g-5'), exp());
    const ran = await scriptsRun(() => raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-count' }, rotation('rt-count-1', 'at-count-1', 'g-5')));
    expect(ran).toEqual([sha(consumeAndIssueScript)]);
    expect(await redis.smembers(key(t, 'oidx:grant:g-5'))).toEqual(expect.arrayContaining(['RefreshToken:rt-count-1', 'AccessToken:at-count-1']));
    expect(await redis.expiretime(key(t, 'oidx:grant:g-5'))).toBeGreaterThanOrEqual(exp() - 5);
    expect(await redis.expiretime(key(t, 'oidc:AccessToken:at-count-1'))).toBe((await raw.find(t, 'AccessToken', 'at-count-1'))?.expires_at);

    await raw.upsert(t, 'RefreshToken', 'rt-count-2', refresh('rt-count-2', 'g-5'), exp());
    const again = await scriptsRun(() => raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-count-1' }, rotation('rt-count-2', 'at-count-2', 'g-5')));
    expect(again).toEqual([sha(consumeAndIssueScript), sha(consumeAndUpsertScript)]);
  });

  it('a record to write that exists already: the general script, which moves it out of its old grant\'s set', async () => {
    await raw.upsert(t, 'RefreshToken', 'rt-prior', refresh('rt-prior', 'g-6'), exp());
    await raw.upsert(t, 'AccessToken', 'at-taken', access('at-taken', 'g-old'), exp());
    const rows: OidcUpsert[] = [{ model: 'AccessToken', id: 'at-taken', payload: access('at-taken', 'g-6'), expiresAt: exp() }];
    expect(await raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-prior' }, rows)).toBe(true);
    expect((await raw.find(t, 'RefreshToken', 'rt-prior'))?.consumed).toBe(true);
    expect((await raw.find(t, 'AccessToken', 'at-taken'))?.payload).toMatchObject({ grantId: 'g-6' });
    expect(await redis.smembers(key(t, 'oidx:grant:g-old'))).toEqual([]);
    expect(await redis.smembers(key(t, 'oidx:grant:g-6'))).toEqual(expect.arrayContaining(['AccessToken:at-taken']));
    // Consumed once: presented again it is a replay.
    expect(await raw.consumeAndUpsert(t, { model: 'RefreshToken', id: 'rt-prior' }, rotation('rt-prior-2', 'at-prior-2', 'g-6'))).toBe(false);
  });

  it("keeps a refresh chain's grant set bounded while its tokens expire: two members a rotation, pruned as one at a time", async () => {
    const g = 'g-chain';
    let used = 'rt-chain-0';
    await raw.upsert(t, 'RefreshToken', used, refresh(used, g), exp());
    const live: string[] = [];
    for (let i = 1; i <= 300; i++) {
      const [rt, at] = [`rt-chain-${i}`, `at-chain-${i}`];
      expect(await raw.consumeAndUpsert(t, { model: 'RefreshToken', id: used }, rotation(rt, at, g))).toBe(true);
      // Redis expires the used token and, here, all but every twentieth access token.
      await redis.del(key(t, `oidc:RefreshToken:${used}`));
      if (i % 20 === 0) live.push(`AccessToken:${at}`);
      else await redis.del(key(t, `oidc:AccessToken:${at}`));
      used = rt;
    }
    const members = await redis.smembers(key(t, `oidx:grant:${g}`));
    // 601 additions, 16 live: without pruning the set would hold them all.
    expect(members.length).toBeLessThan(4 * live.length + GRANT_PRUNE.from);
    expect(members).toEqual(expect.arrayContaining([...live, `RefreshToken:${used}`]));
  });
});

describe('through the bearer-id wrapper, as the token paths call it', () => {
  const t = 'wrapped';
  const sealer = new Sealer(randomBytes(32));
  const storedId = bearerProtector(sealer).storedId;

  it('a refresh token found by this request: consumed under its keyed id, its successor stored under its own without the value', async () => {
    const repo = protectBearerIds(raw, sealer);
    const used = tokenValue();
    const next = tokenValue();
    await repo.upsert(t, 'RefreshToken', used, refresh(used), exp());
    expect((await repo.find(t, 'RefreshToken', used))?.consumed).toBe(false);
    expect(await consumeAndUpsert(repo, t, { model: 'RefreshToken', id: used }, rotation(next, 'at-w1'))).toBe(true);
    expect((await raw.find(t, 'RefreshToken', storedId(t, 'RefreshToken', used)))?.consumed).toBe(true);
    const stored = await raw.find(t, 'RefreshToken', storedId(t, 'RefreshToken', next));
    expect(stored?.payload.jti).toBeUndefined();
    expect(await redis.exists(key(t, `oidc:RefreshToken:${next}`))).toBe(0);
    expect((await repo.find(t, 'RefreshToken', next))?.payload).toEqual(refresh(next));
    expect((await repo.find(t, 'AccessToken', 'at-w1'))?.payload.jti).toBe('at-w1');
    // Presented again: refused, nothing more written.
    await repo.find(t, 'RefreshToken', used);
    expect(await consumeAndUpsert(repo, t, { model: 'RefreshToken', id: used }, rotation(tokenValue(), 'at-w2'))).toBe(false);
    expect(await repo.find(t, 'AccessToken', 'at-w2')).toBeUndefined();
  });

  it('a value not found by this process, or found in another tenant: consumed all the same, in its own tenant only', async () => {
    const repo = protectBearerIds(raw, sealer);
    const value = tokenValue();
    await repo.upsert(t, 'RefreshToken', value, refresh(value), exp());
    await repo.upsert(`${t}-b`, 'RefreshToken', value, refresh(value), exp());
    // Found in tenant b, consumed in t: t's row, through every id the value may be under.
    await repo.find(`${t}-b`, 'RefreshToken', value);
    expect(await consumeAndUpsert(repo, t, { model: 'RefreshToken', id: value }, rotation(tokenValue(), 'at-w3'))).toBe(true);
    expect((await repo.find(t, 'RefreshToken', value))?.consumed).toBe(true);
    expect((await repo.find(`${t}-b`, 'RefreshToken', value))?.consumed).toBe(false);
    // A row under the raw value (stored before hashing), never looked up here.
    await raw.upsert(t, 'RefreshToken', 'rt-raw', refresh('rt-raw'), exp());
    expect(await consumeAndUpsert(protectBearerIds(raw, sealer), t, { model: 'RefreshToken', id: 'rt-raw' }, rotation(tokenValue(), 'at-w4'))).toBe(true);
    expect((await raw.find(t, 'RefreshToken', 'rt-raw'))?.consumed).toBe(true);
  });
});

describe('upsertTogether: a silent authorization\'s code and session re-save', () => {
  const t = 'together';
  const sealer = new Sealer(randomBytes(32));
  const storedId = bearerProtector(sealer).storedId;
  const sessionRow = (sid: string, expiresAt: number): OidcUpsert => ({ model: 'Session', id: sid, payload: { jti: sid, kind: 'Session', uid: `uid-${sid}`, accountId: 'user-1', authorizations: { 'c-1': { grantId: 'g-t', sid: 'x' } } }, expiresAt });
  const codeRow = (code: string): OidcUpsert => ({ model: 'AuthorizationCode', id: code, payload: { jti: code, kind: 'AuthorizationCode', grantId: 'g-t', accountId: 'user-1' }, expiresAt: nowSec() + 60 });

  it('on Redis through the wrapper: one script, each row stored as upsert stores it (the session under its keyed id, sealed)', async () => {
    const repo = protectBearerIds(raw, sealer);
    expect(repo.upsertMany).toBeDefined();
    const sid = tokenValue();
    const code = tokenValue();
    await upsertTogether(repo, t, [codeRow(code), sessionRow(sid, exp())]);
    expect(await redis.exists(key(t, `oidc:Session:${sid}`))).toBe(0);
    const stored = await raw.find(t, 'Session', storedId(t, 'Session', sid));
    expect(stored?.payload.jti).toBeUndefined();
    expect(typeof stored?.payload.jti_sealed).toBe('string');
    expect((await repo.findByUid(t, 'Session', `uid-${sid}`))?.payload.jti).toBe(sid);
    expect((await repo.find(t, 'AuthorizationCode', code))?.payload.grantId).toBe('g-t');
    // Another tenant sees neither.
    expect(await repo.find(`${t}-b`, 'Session', sid)).toBeUndefined();
    expect(await repo.find(`${t}-b`, 'AuthorizationCode', code)).toBeUndefined();
  });

  it('on SQLite through the wrapper: one write of the group commit, with the same result', async () => {
    const db = openSqlite(':memory:');
    const repo = protectBearerIds(new SqliteOidcPayloads(db), sealer);
    expect(repo.upsertMany).toBeDefined();
    const sid = tokenValue();
    const code = tokenValue();
    await upsertTogether(repo, 'default', [codeRow(code), sessionRow(sid, exp())]);
    expect((await repo.findByUid('default', 'Session', `uid-${sid}`))?.payload.jti).toBe(sid);
    expect((await repo.find('default', 'AuthorizationCode', code))?.payload.grantId).toBe('g-t');
    db.close();
  });
});

describe('SQLite, and a store without the method', () => {
  /** The SQLite repository without its one-step methods: what a store lacking them gets. */
  const withoutSteps = (inner: SqliteOidcPayloads) => Object.assign(Object.create(inner) as SqliteOidcPayloads, { consumeAndUpsert: undefined, upsertMany: undefined });

  for (const [name, make] of [
    ['on SQLite through the wrapper: one write of the group commit', (inner: SqliteOidcPayloads) => inner],
    ['a store without the method: the consume and the upserts side by side', withoutSteps],
  ] as const) {
    it(`${name}: consumes and writes; a replay consumes and writes nothing more`, async () => {
      const db = openSqlite(':memory:');
      const inner = make(new SqliteOidcPayloads(db));
      const repo = protectBearerIds(inner, new Sealer(randomBytes(32)));
      expect(repo.consumeAndUpsert === undefined).toBe(inner.consumeAndUpsert === undefined);
      const used = tokenValue();
      const next = tokenValue();
      await repo.upsert('default', 'RefreshToken', used, refresh(used), exp());
      await repo.find('default', 'RefreshToken', used);
      expect(await consumeAndUpsert(repo, 'default', { model: 'RefreshToken', id: used }, rotation(next, 'at-s1'))).toBe(true);
      expect((await repo.find('default', 'RefreshToken', used))?.consumed).toBe(true);
      expect((await repo.find('default', 'RefreshToken', next))?.payload).toEqual(refresh(next));
      const late = tokenValue();
      expect(await consumeAndUpsert(repo, 'default', { model: 'RefreshToken', id: used }, rotation(late, 'at-s2'))).toBe(false);
      // One step writes nothing for a spent token; side by side the rows are written and left to the caller's revocation.
      if (inner.consumeAndUpsert) expect(await repo.find('default', 'RefreshToken', late)).toBeUndefined();
      db.close();
    });
  }
});

const sha = (script: { source: string }) => createHash('sha1').update(script.source).digest('hex');

/** The scripts (by SHA) `run` had Redis run through `raw`'s client. */
async function scriptsRun(run: () => Promise<unknown>): Promise<string[]> {
  const shas: string[] = [];
  const evalsha = redis.evalsha.bind(redis) as (...args: unknown[]) => Promise<unknown>;
  const spy = vi.spyOn(redis, 'evalsha').mockImplementation(((...args: unknown[]) => {
    shas.push(String(args[0]));
    return evalsha(...args);
  }) as unknown as Redis['evalsha']);
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return shas;
}
