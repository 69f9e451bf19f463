/**
 * RedisOidcPayloads against a real Redis. The shared semantics run against the SQLite repository
 * too, so the two backends are held to one behaviour; Redis-only checks (TTLs, indexes, fail-fast)
 * follow. This file's keys live under its own prefix and are deleted at the end.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Unavailable } from '../../src/errors.js';
import { toProblem } from '../../src/http/problem.js';
import { commandOptions, createRedis } from '../../src/storage/redis/client.js';
import { RedisOidcPayloads } from '../../src/storage/redis/oidc-payloads.js';
import { GRANT_PRUNE } from '../../src/storage/redis/oidc-scripts.js';
import type { OidcPayloadRepository } from '../../src/storage/types.js';
import { freePort } from '../helpers/app.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';
import { checkFindWithGrant } from '../helpers/with-grant.js';

const nowSec = () => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id).sort();

const prefix = uniquePrefix('oidc');
let redis: Redis;
let sqlite: TempStorage;
const repos: Record<string, () => OidcPayloadRepository> = {};

beforeAll(() => {
  redis = new Redis(SHARED_REDIS_URL);
  sqlite = openTempStorage();
  repos.redis = () => new RedisOidcPayloads(redis, { prefix });
  repos.sqlite = () => sqlite.storage.oidc;
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
  await sqlite.close();
});

/** A session payload as oidc-provider writes it. */
const session = (accountId: string | undefined, clients: string[], extra: Record<string, unknown> = {}) => ({
  ...(accountId ? { accountId } : {}),
  authorizations: Object.fromEntries(clients.map((c) => [c, { sid: `sid-${c}`, grantId: `grant-${accountId}-${c}` }])),
  ...extra,
});

describe.each(['redis', 'sqlite'])('oidc payloads: shared semantics (%s)', (backend) => {
  let repo: OidcPayloadRepository;
  const t = `sem-${backend}`;
  beforeAll(() => {
    repo = repos[backend]!();
  });

  it('upserts and finds by model and id; a second upsert replaces the payload and the expiry', async () => {
    // One expiry value: two nowSec() calls can fall on either side of a second boundary.
    const expiresAt = nowSec() + 60;
    await repo.upsert(t, 'Session', 's1', { uid: 'u1', accountId: 'acc' }, expiresAt);
    expect(await repo.find(t, 'Session', 's1')).toEqual({ payload: { uid: 'u1', accountId: 'acc' }, expires_at: expiresAt, consumed: false });
    expect(await repo.find(t, 'Grant', 's1')).toBeUndefined();
    await repo.upsert(t, 'Session', 's1', { uid: 'u1', accountId: 'acc2' }, null);
    expect(await repo.find(t, 'Session', 's1')).toEqual({ payload: { uid: 'u1', accountId: 'acc2' }, expires_at: null, consumed: false });
  });

  it('finds a token with the grant it names (findWithGrant: the grant read after the token on both)', async () => {
    await checkFindWithGrant(repo, `${t}-wg`, `${t}-wg2`, false);
  });

  it('hides expired rows from every reader', async () => {
    await repo.upsert(t, 'Interaction', 'old', { uid: 'old-uid', userCode: 'OLD-CODE' }, nowSec() - 1);
    expect(await repo.find(t, 'Interaction', 'old')).toBeUndefined();
    expect(await repo.findByUid(t, 'Interaction', 'old-uid')).toBeUndefined();
    expect(await repo.findByUserCode(t, 'Interaction', 'OLD-CODE')).toBeUndefined();
    await repo.upsert(t, 'Session', 'old-session', { uid: 'old-session-uid' }, nowSec() - 1);
    expect(ids(await repo.listByModel(t, 'Session'))).not.toContain('old-session');
  });

  it('lets a row expire on its own at expires_at', async () => {
    await repo.upsert(t, 'AuthorizationCode', 'short', { uid: 'short-uid', grantId: 'g-short' }, nowSec() + 1);
    expect(await repo.find(t, 'AuthorizationCode', 'short')).toBeDefined();
    await sleep(2100);
    expect(await repo.find(t, 'AuthorizationCode', 'short')).toBeUndefined();
    expect(await repo.findByUid(t, 'AuthorizationCode', 'short-uid')).toBeUndefined();
  });

  it('consumes; a later upsert keeps the flag; consuming an unknown id creates nothing', async () => {
    await repo.upsert(t, 'AuthorizationCode', 'code1', { grantId: 'g1' }, nowSec() + 60);
    expect((await repo.find(t, 'AuthorizationCode', 'code1'))?.consumed).toBe(false);
    expect(await repo.consume(t, 'AuthorizationCode', 'code1')).toBe(true);
    expect((await repo.find(t, 'AuthorizationCode', 'code1'))?.consumed).toBe(true);
    await repo.upsert(t, 'AuthorizationCode', 'code1', { grantId: 'g1', more: 1 }, nowSec() + 60);
    expect(await repo.find(t, 'AuthorizationCode', 'code1')).toMatchObject({ payload: { more: 1 }, consumed: true });
    // Consumed already (a later upsert kept the flag), or not there: not consumed by this call.
    expect(await repo.consume(t, 'AuthorizationCode', 'code1')).toBe(false);
    expect(await repo.consume(t, 'AuthorizationCode', 'nope')).toBe(false);
    expect(await repo.find(t, 'AuthorizationCode', 'nope')).toBeUndefined();
  });

  it('decides concurrent consumes of one row: exactly one gets true', async () => {
    await repo.upsert(t, 'RefreshToken', 'rt-race', { grantId: 'g1' }, nowSec() + 60);
    const results = await Promise.all(Array.from({ length: 8 }, () => repo.consume(t, 'RefreshToken', 'rt-race')));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('finds by uid and by user code within the model, exactly, following changes', async () => {
    await repo.upsert(t, 'Session', 's2', { uid: 'uid-2' }, nowSec() + 60);
    await repo.upsert(t, 'DeviceCode', 'd1', { userCode: 'ABCD-EFGH', grantId: 'g2' }, nowSec() + 60);
    expect((await repo.findByUid(t, 'Session', 'uid-2'))?.payload).toEqual({ uid: 'uid-2' });
    expect(await repo.findByUid(t, 'Grant', 'uid-2')).toBeUndefined();
    expect((await repo.findByUserCode(t, 'DeviceCode', 'ABCD-EFGH'))?.payload).toEqual({ userCode: 'ABCD-EFGH', grantId: 'g2' });
    expect(await repo.findByUserCode(t, 'DeviceCode', 'abcd-efgh')).toBeUndefined();
    // The session gets a new uid: the old one no longer finds it.
    await repo.upsert(t, 'Session', 's2', { uid: 'uid-2b' }, nowSec() + 60);
    expect(await repo.findByUid(t, 'Session', 'uid-2')).toBeUndefined();
    expect((await repo.findByUid(t, 'Session', 'uid-2b'))?.payload).toEqual({ uid: 'uid-2b' });
    await repo.consume(t, 'DeviceCode', 'd1');
    expect((await repo.findByUserCode(t, 'DeviceCode', 'ABCD-EFGH'))?.consumed).toBe(true);
  });

  it('revokes every artefact of a grant and nothing else', async () => {
    await repo.upsert(t, 'AccessToken', 'at1', { grantId: 'gx' }, nowSec() + 60);
    await repo.upsert(t, 'RefreshToken', 'rt1', { grantId: 'gx', uid: 'rt1-uid' }, nowSec() + 600);
    await repo.upsert(t, 'AccessToken', 'at2', { grantId: 'gy' }, nowSec() + 60);
    // Moved to another grant before the revocation: not part of gx any more.
    await repo.upsert(t, 'AccessToken', 'at3', { grantId: 'gx' }, nowSec() + 60);
    await repo.upsert(t, 'AccessToken', 'at3', { grantId: 'gz' }, nowSec() + 60);
    await repo.upsert(`${t}-other`, 'AccessToken', 'at1', { grantId: 'gx' }, nowSec() + 60);
    await repo.revokeByGrantId(t, 'gx');
    expect(await repo.find(t, 'AccessToken', 'at1')).toBeUndefined();
    expect(await repo.find(t, 'RefreshToken', 'rt1')).toBeUndefined();
    expect(await repo.findByUid(t, 'RefreshToken', 'rt1-uid')).toBeUndefined();
    expect(await repo.find(t, 'AccessToken', 'at2')).toBeDefined();
    expect(await repo.find(t, 'AccessToken', 'at3')).toBeDefined();
    expect(await repo.find(`${t}-other`, 'AccessToken', 'at1')).toBeDefined();
  });

  it('destroys one row and its lookups', async () => {
    await repo.upsert(t, 'Interaction', 'i1', { uid: 'i1-uid' }, nowSec() + 60);
    await repo.destroy(t, 'Interaction', 'i1');
    expect(await repo.find(t, 'Interaction', 'i1')).toBeUndefined();
    expect(await repo.findByUid(t, 'Interaction', 'i1-uid')).toBeUndefined();
    await repo.upsert(t, 'Session', 'destroyed', { uid: 'destroyed-uid' }, nowSec() + 60);
    expect(ids(await repo.listByModel(t, 'Session'))).toContain('destroyed');
    await repo.destroy(t, 'Session', 'destroyed');
    expect(await repo.findByUid(t, 'Session', 'destroyed-uid')).toBeUndefined();
    expect(ids(await repo.listByModel(t, 'Session'))).not.toContain('destroyed');
  });

  it('lists unexpired rows of a model, with and without expiry', async () => {
    const lt = `${t}-list`;
    await repo.upsert(lt, 'Grant', 'g-live', { clientId: 'c' }, nowSec() + 60);
    await repo.upsert(lt, 'Grant', 'g-forever', { clientId: 'c' }, null);
    await repo.upsert(lt, 'Grant', 'g-dead', { clientId: 'c' }, nowSec() - 5);
    await repo.upsert(lt, 'Session', 'not-a-grant', {}, nowSec() + 60);
    const rows = await repo.listByModel(lt, 'Grant');
    expect(ids(rows)).toEqual(['g-forever', 'g-live']);
    expect(rows.find((r) => r.id === 'g-forever')).toEqual({ id: 'g-forever', payload: { clientId: 'c' }, expires_at: null });
  });

  it('lists sessions per account, per client, both and neither, following changes', async () => {
    const st = `${t}-sessions`;
    const exp = nowSec() + 600;
    await repo.upsert(st, 'Session', 'alice-1', session('alice', ['web', 'spa']), exp);
    await repo.upsert(st, 'Session', 'alice-2', session('alice', ['spa']), exp);
    await repo.upsert(st, 'Session', 'bob-1', session('bob', ['web']), exp);
    await repo.upsert(st, 'Session', 'anon', session(undefined, []), exp);
    await repo.upsert(st, 'Session', 'alice-old', session('alice', ['web']), nowSec() - 1);
    await repo.upsert(st, 'Grant', 'alice-grant', { accountId: 'alice', clientId: 'web' }, exp);

    expect(ids(await repo.listSessions(st, { accountId: 'alice' }))).toEqual(['alice-1', 'alice-2']);
    expect(ids(await repo.listSessions(st, { clientId: 'web' }))).toEqual(['alice-1', 'bob-1']);
    expect(ids(await repo.listSessions(st, { accountId: 'alice', clientId: 'web' }))).toEqual(['alice-1']);
    expect(ids(await repo.listSessions(st, {}))).toEqual(['alice-1', 'alice-2', 'anon', 'bob-1']);
    expect(await repo.listSessions(st, { accountId: 'nobody' })).toEqual([]);
    const row = (await repo.listSessions(st, { accountId: 'bob' }))[0];
    expect(row).toEqual({ id: 'bob-1', payload: session('bob', ['web']), expires_at: exp });

    // The anonymous session signs in as bob with the spa; alice-2 logs out of the spa.
    await repo.upsert(st, 'Session', 'anon', session('bob', ['spa']), exp);
    await repo.upsert(st, 'Session', 'alice-2', session('alice', []), exp);
    expect(ids(await repo.listSessions(st, { accountId: 'bob' }))).toEqual(['anon', 'bob-1']);
    expect(ids(await repo.listSessions(st, { clientId: 'spa' }))).toEqual(['alice-1', 'anon']);

    await repo.destroy(st, 'Session', 'alice-1');
    expect(ids(await repo.listSessions(st, { accountId: 'alice' }))).toEqual(['alice-2']);
    expect(ids(await repo.listSessions(st, { clientId: 'web' }))).toEqual(['bob-1']);
  });

  it('lists grant ids per account, per client and both, following changes', async () => {
    const gt = `${t}-grants`;
    const exp = nowSec() + 600;
    await repo.upsert(gt, 'Grant', 'g-a-web', { accountId: 'alice', clientId: 'web' }, exp);
    await repo.upsert(gt, 'Grant', 'g-a-spa', { accountId: 'alice', clientId: 'spa' }, null);
    await repo.upsert(gt, 'Grant', 'g-b-web', { accountId: 'bob', clientId: 'web' }, exp);
    await repo.upsert(gt, 'Grant', 'g-old', { accountId: 'alice', clientId: 'web' }, nowSec() - 1);
    await repo.upsert(gt, 'Session', 's-alice', session('alice', ['web']), exp);
    expect((await repo.listGrantIds(gt, { accountId: 'alice' })).sort()).toEqual(['g-a-spa', 'g-a-web']);
    expect((await repo.listGrantIds(gt, { clientId: 'web' })).sort()).toEqual(['g-a-web', 'g-b-web']);
    expect(await repo.listGrantIds(gt, { accountId: 'bob', clientId: 'web' })).toEqual(['g-b-web']);
    await repo.upsert(gt, 'Grant', 'g-b-web', { accountId: 'bob', clientId: 'spa' }, exp);
    await repo.destroy(gt, 'Grant', 'g-a-web');
    expect(await repo.listGrantIds(gt, { clientId: 'web' })).toEqual([]);
    expect((await repo.listGrantIds(gt, { clientId: 'spa' })).sort()).toEqual(['g-a-spa', 'g-b-web']);
    expect(await repo.listGrantIds(`${gt}-other`, { accountId: 'alice' })).toEqual([]);
    expect(await repo.countLive(gt, 'Grant')).toBe(2);
    expect(await repo.countLive(gt, 'Session')).toBe(1);
  });

  it('isolates tenants on every method', async () => {
    const a = `${t}-iso-a`;
    const b = `${t}-iso-b`;
    await repo.upsert(a, 'Session', 'sess', { uid: 'iso-uid', userCode: 'ISO-CODE', grantId: 'iso-grant', ...session('acc', ['cl']) }, nowSec() + 60);
    expect(await repo.find(b, 'Session', 'sess')).toBeUndefined();
    expect(await repo.findByUid(b, 'Session', 'iso-uid')).toBeUndefined();
    expect(await repo.findByUserCode(b, 'Session', 'ISO-CODE')).toBeUndefined();
    expect(await repo.listByModel(b, 'Session')).toEqual([]);
    expect(await repo.listSessions(b, { accountId: 'acc' })).toEqual([]);
    expect(await repo.listSessions(b, { clientId: 'cl' })).toEqual([]);
    await repo.consume(b, 'Session', 'sess');
    await repo.destroy(b, 'Session', 'sess');
    await repo.revokeByGrantId(b, 'iso-grant');
    // The same id in tenant B is a separate row.
    await repo.upsert(b, 'Session', 'sess', { uid: 'b' }, nowSec() + 60);
    expect(await repo.find(a, 'Session', 'sess')).toMatchObject({ payload: { uid: 'iso-uid' }, consumed: false });
    expect((await repo.find(b, 'Session', 'sess'))?.payload).toEqual({ uid: 'b' });
    expect(ids(await repo.listSessions(a, { accountId: 'acc' }))).toEqual(['sess']);
  });
});

describe('RedisOidcPayloads: keys, TTLs and indexes', () => {
  let repo: RedisOidcPayloads;
  const t = 'layout';
  const key = (rest: string) => `${prefix}:${t}:${rest}`;
  beforeAll(() => {
    repo = new RedisOidcPayloads(redis, { prefix });
  });

  it('keeps a record and its lookups under the tenant prefix, expiring with the artefact', async () => {
    const exp = nowSec() + 120;
    await repo.upsert(t, 'DeviceCode', 'dc1', { uid: 'dc-uid', userCode: 'WXYZ-1234', grantId: 'dc-grant' }, exp);
    for (const k of [key('oidc:DeviceCode:dc1'), key('oidx:uid:DeviceCode:dc-uid'), key('oidx:code:DeviceCode:WXYZ-1234'), key('oidx:grant:dc-grant')]) {
      expect(await redis.expiretime(k), k).toBe(exp);
    }
    // A longer-lived member extends the grant set; a shorter one never shortens it.
    await repo.upsert(t, 'RefreshToken', 'rt-long', { grantId: 'dc-grant' }, exp + 1000);
    await repo.upsert(t, 'AccessToken', 'at-short', { grantId: 'dc-grant' }, exp - 60);
    expect(await redis.expiretime(key('oidx:grant:dc-grant'))).toBe(exp + 1000);
    expect(await redis.smembers(key('oidx:grant:dc-grant'))).toEqual(expect.arrayContaining(['DeviceCode:dc1', 'RefreshToken:rt-long', 'AccessToken:at-short']));
  });

  it('indexes by model the listed models alone (sessions and grants), not tokens, codes or interactions', async () => {
    const mt = 'layout-models';
    const mkey = (rest: string) => `${prefix}:${mt}:${rest}`;
    const exp = nowSec() + 120;
    for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode', 'Interaction', 'DeviceCode', 'ClientCredentials']) {
      await repo.upsert(mt, model, `${model}-1`, { grantId: 'g-models', uid: `${model}-uid` }, exp);
      expect(await repo.find(mt, model, `${model}-1`), model).toBeDefined();
      expect(await redis.exists(mkey(`oidx:model:${model}`)), model).toBe(0);
    }
    await repo.upsert(mt, 'Session', 's-models', session('frank', ['app']), exp);
    await repo.upsert(mt, 'Grant', 'g-models', { accountId: 'frank', clientId: 'app' }, exp);
    expect(await redis.zscore(mkey('oidx:model:Session'), 's-models')).toBe(String(exp));
    expect(await redis.zscore(mkey('oidx:model:Grant'), 'g-models')).toBe(String(exp));
    expect(await repo.countLive(mt, 'Session')).toBe(1);
    expect(ids(await repo.listByModel(mt, 'Grant'))).toEqual(['g-models']);
    // Every artefact of the grant still goes with it: the grant set, not the model index, finds them.
    await repo.revokeByGrantId(mt, 'g-models');
    for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode', 'Interaction', 'DeviceCode', 'ClientCredentials']) {
      expect(await repo.find(mt, model, `${model}-1`), model).toBeUndefined();
    }
  });

  it('leaves a model index written by an earlier version unread and harmless', async () => {
    const ot = 'layout-old-model-index';
    const okey = (rest: string) => `${prefix}:${ot}:${rest}`;
    const exp = nowSec() + 120;
    // A refresh token as the previous release indexed it: also a member of the model's sorted set.
    await repo.upsert(ot, 'RefreshToken', 'rt-old', { grantId: 'g-old-index' }, exp);
    await redis.zadd(okey('oidx:model:RefreshToken'), exp, 'rt-old');
    await redis.expireat(okey('oidx:model:RefreshToken'), exp);
    expect(await repo.consume(ot, 'RefreshToken', 'rt-old')).toBe(true);
    await repo.upsert(ot, 'RefreshToken', 'rt-new', { grantId: 'g-old-index' }, exp + 60);
    await repo.destroy(ot, 'RefreshToken', 'rt-old');
    expect(await repo.find(ot, 'RefreshToken', 'rt-old')).toBeUndefined();
    expect((await repo.find(ot, 'RefreshToken', 'rt-new'))?.payload).toEqual({ grantId: 'g-old-index' });
    // Not written any more: the old set keeps its member until its own TTL, and gains none.
    expect(await redis.zrange(okey('oidx:model:RefreshToken'), 0, -1)).toEqual(['rt-old']);
    expect(await redis.expiretime(okey('oidx:model:RefreshToken'))).toBe(exp);
    await repo.revokeByGrantId(ot, 'g-old-index');
    expect(await repo.find(ot, 'RefreshToken', 'rt-new')).toBeUndefined();
  });

  it('lists sessions from the per-account and per-client sorted sets, scored by expiry', async () => {
    const exp = nowSec() + 300;
    await repo.upsert(t, 'Session', 'sx', session('carol', ['app']), exp);
    expect(await redis.zscore(key('oidx:session-account:carol'), 'sx')).toBe(String(exp));
    expect(await redis.zscore(key('oidx:session-client:app'), 'sx')).toBe(String(exp));
    // Only the index is read: a session missing from it is not found by a filter.
    await redis.zrem(key('oidx:session-account:carol'), 'sx');
    expect(await repo.listSessions(t, { accountId: 'carol' })).toEqual([]);
    expect(ids(await repo.listSessions(t, { clientId: 'app' }))).toEqual(['sx']);
    await repo.destroy(t, 'Session', 'sx');
    expect(await redis.exists(key('oidx:session-client:app'), key('oidc:Session:sx'))).toBe(0);
  });

  it('lists grants from the per-account and per-client sorted sets, scored by expiry', async () => {
    const exp = nowSec() + 300;
    await repo.upsert(t, 'Grant', 'gx', { accountId: 'dave', clientId: 'app' }, exp);
    expect(await redis.zscore(key('oidx:grant-account:dave'), 'gx')).toBe(String(exp));
    expect(await redis.zscore(key('oidx:grant-client:app'), 'gx')).toBe(String(exp));
    expect(await redis.expiretime(key('oidx:grant-account:dave'))).toBe(exp);
    expect(await repo.listGrantIds(t, { accountId: 'dave', clientId: 'app' })).toEqual(['gx']);
    await repo.revokeByGrantId(t, 'gx'); // the grant's own artefacts, not the Grant record
    await repo.destroy(t, 'Grant', 'gx');
    expect(await redis.exists(key('oidx:grant-account:dave'), key('oidx:grant-client:app'))).toBe(0);
  });

  it('indexes grants saved before the account and client indexes existed, once per tenant', async () => {
    const old = 'layout-old-grants';
    const okey = (rest: string) => `${prefix}:${old}:${rest}`;
    const exp = nowSec() + 300;
    // A Grant as the previous release stored it: no account or client on the record, no index.
    await redis.hset(okey('oidc:Grant:g-old'), 'p', JSON.stringify({ accountId: 'erin', clientId: 'app' }), 'e', String(exp), 'u', '', 'uc', '', 'g', '', 'a', '', 'cl', '[]');
    await redis.expireat(okey('oidc:Grant:g-old'), exp);
    await redis.zadd(okey('oidx:model:Grant'), exp, 'g-old');
    const fresh = new RedisOidcPayloads(redis, { prefix });
    expect(await fresh.listGrantIds(old, { accountId: 'erin' })).toEqual(['g-old']);
    expect(await fresh.listGrantIds(old, { clientId: 'app' })).toEqual(['g-old']);
    expect(await redis.get(okey('oidx:grants-indexed'))).toBe('1');
    // Indexed like a new grant: destroying it clears the entries.
    await fresh.destroy(old, 'Grant', 'g-old');
    expect(await redis.exists(okey('oidx:grant-account:erin'), okey('oidx:grant-client:app'))).toBe(0);
  });

  it('renews the entries of a re-saved session in place and drops only what it no longer carries', async () => {
    const rt = 'layout-resave';
    const rkey = (rest: string) => `${prefix}:${rt}:${rest}`;
    const exp = nowSec() + 300;
    const entries = [rkey('oidx:model:Session'), rkey('oidx:session-account:gina'), rkey('oidx:session-client:web'), rkey('oidx:session-client:spa')];
    await repo.upsert(rt, 'Session', 'sg', session('gina', ['web', 'spa'], { uid: 'uid-g' }), exp);
    // A silent authorization's re-save: the same uid, account and clients, a later expiry.
    await repo.upsert(rt, 'Session', 'sg', session('gina', ['web', 'spa'], { uid: 'uid-g' }), exp + 100);
    for (const k of entries) {
      expect(await redis.zscore(k, 'sg'), k).toBe(String(exp + 100));
      expect(await redis.expiretime(k), k).toBe(exp + 100);
    }
    expect(await redis.get(rkey('oidx:uid:Session:uid-g'))).toBe('sg');
    expect(await redis.expiretime(rkey('oidx:uid:Session:uid-g'))).toBe(exp + 100);
    expect((await repo.findByUid(rt, 'Session', 'uid-g'))?.expires_at).toBe(exp + 100);

    // It leaves the spa and gets a new uid: the spa's entry and the old pointer go, the rest stay.
    await repo.upsert(rt, 'Session', 'sg', session('gina', ['web'], { uid: 'uid-g2' }), exp + 100);
    expect(await redis.exists(rkey('oidx:session-client:spa'), rkey('oidx:uid:Session:uid-g'))).toBe(0);
    expect(await repo.findByUid(rt, 'Session', 'uid-g')).toBeUndefined();
    expect((await repo.findByUid(rt, 'Session', 'uid-g2'))?.payload.accountId).toBe('gina');
    expect(ids(await repo.listSessions(rt, { accountId: 'gina', clientId: 'web' }))).toEqual(['sg']);
    // Another account: the old account's entry goes.
    await repo.upsert(rt, 'Session', 'sg', session('hank', ['web'], { uid: 'uid-g2' }), exp + 100);
    expect(await redis.exists(rkey('oidx:session-account:gina'))).toBe(0);
    expect(ids(await repo.listSessions(rt, { accountId: 'hank' }))).toEqual(['sg']);
    // Saved expired: every entry goes with the record.
    await repo.upsert(rt, 'Session', 'sg', session('hank', ['web'], { uid: 'uid-g2' }), nowSec() - 1);
    expect(await redis.exists(rkey('oidc:Session:sg'), rkey('oidx:uid:Session:uid-g2'), rkey('oidx:model:Session'), rkey('oidx:session-account:hank'), rkey('oidx:session-client:web'))).toBe(0);
  });

  it('gives an index left with one live member after pruning the expiry of that member', async () => {
    const pt = 'layout-prune-ttl';
    const pkey = (rest: string) => `${prefix}:${pt}:${rest}`;
    const exp = nowSec() + 60;
    // A key kept alive longer than its live members by a member that has since expired.
    await redis.zadd(pkey('oidx:grant-client:app'), nowSec() - 10, 'stale');
    await redis.expireat(pkey('oidx:grant-client:app'), exp + 1000);
    await repo.upsert(pt, 'Grant', 'g1', { accountId: 'ivy', clientId: 'app' }, exp);
    expect(await redis.zrange(pkey('oidx:grant-client:app'), 0, -1)).toEqual(['g1']);
    expect(await redis.expiretime(pkey('oidx:grant-client:app'))).toBe(exp);
    // A second member never shortens it.
    await repo.upsert(pt, 'Grant', 'g2', { accountId: 'ivy', clientId: 'app' }, exp - 30);
    expect(await redis.expiretime(pkey('oidx:grant-client:app'))).toBe(exp);
  });

  it('stores only the indexed values a record has, and deletes one it no longer has', async () => {
    const ft = 'layout-fields';
    const fkey = (rest: string) => `${prefix}:${ft}:${rest}`;
    const exp = nowSec() + 120;
    await repo.upsert(ft, 'AccessToken', 'at-f', { grantId: 'g-f', accountId: 'kim', jti: 'at-f', padding: 'x'.repeat(200) }, exp);
    // No uid, user code, account or clients on a token: only its payload, expiry and grant.
    expect(Object.keys(await redis.hgetall(fkey('oidc:AccessToken:at-f'))).sort()).toEqual(['e', 'g', 'p']);
    expect(await repo.consume(ft, 'AccessToken', 'at-f')).toBe(true);
    await repo.upsert(ft, 'Session', 's-f', session('kim', ['app'], { uid: 'uid-f' }), exp);
    expect(Object.keys(await redis.hgetall(fkey('oidc:Session:s-f'))).sort()).toEqual(['a', 'cl', 'e', 'p', 'u']);
    // Signed out of every client and its uid gone: those fields go, and the record is still found.
    await repo.upsert(ft, 'Session', 's-f', session('kim', []), exp);
    expect(Object.keys(await redis.hgetall(fkey('oidc:Session:s-f'))).sort()).toEqual(['a', 'e', 'p']);
    expect(await repo.findByUid(ft, 'Session', 'uid-f')).toBeUndefined();
    expect(ids(await repo.listSessions(ft, { accountId: 'kim' }))).toEqual(['s-f']);
    expect(await repo.listSessions(ft, { clientId: 'app' })).toEqual([]);
    // A token saved again keeps its consumed flag, and a record as earlier versions stored it
    // (every field, empty ones too) is read and re-indexed the same.
    await repo.upsert(ft, 'AccessToken', 'at-f', { grantId: 'g-f', jti: 'at-f' }, exp);
    expect((await repo.find(ft, 'AccessToken', 'at-f'))?.consumed).toBe(true);
    await redis.hset(fkey('oidc:RefreshToken:rt-old'), 'p', JSON.stringify({ grantId: 'g-f' }), 'e', String(exp), 'u', '', 'uc', '', 'g', 'g-f', 'a', '', 'cl', '[]');
    await redis.sadd(fkey('oidx:grant:g-f'), 'RefreshToken:rt-old');
    expect((await repo.find(ft, 'RefreshToken', 'rt-old'))?.payload).toEqual({ grantId: 'g-f' });
    await repo.upsert(ft, 'RefreshToken', 'rt-old', { grantId: 'g-f', rotations: 1 }, exp);
    expect(Object.keys(await redis.hgetall(fkey('oidc:RefreshToken:rt-old'))).sort()).toEqual(['e', 'g', 'p']);
    await repo.revokeByGrantId(ft, 'g-f');
    expect(await redis.exists(fkey('oidc:AccessToken:at-f'), fkey('oidc:RefreshToken:rt-old'))).toBe(0);
  });

  it('writes several rows in one step (upsertMany), each indexed as upsert indexes it', async () => {
    const mt = 'layout-many';
    const mkey = (rest: string) => `${prefix}:${mt}:${rest}`;
    const exp = nowSec() + 120;
    await repo.upsert(mt, 'Session', 's-many', session('jo', ['app'], { uid: 'uid-many' }), exp);
    await repo.upsertMany(mt, [
      { model: 'AuthorizationCode', id: 'code-many', payload: { grantId: 'g-many', accountId: 'jo' }, expiresAt: exp - 60 },
      { model: 'Session', id: 's-many', payload: session('jo', ['app'], { uid: 'uid-many' }), expiresAt: exp + 60 },
      { model: 'AccessToken', id: 'at-gone', payload: { grantId: 'g-many' }, expiresAt: nowSec() - 1 },
    ]);
    expect((await repo.find(mt, 'AuthorizationCode', 'code-many'))?.expires_at).toBe(exp - 60);
    expect(await redis.smembers(mkey('oidx:grant:g-many'))).toEqual(['AuthorizationCode:code-many']);
    expect((await repo.findByUid(mt, 'Session', 'uid-many'))?.expires_at).toBe(exp + 60);
    expect(await redis.zscore(mkey('oidx:session-account:jo'), 's-many')).toBe(String(exp + 60));
    expect(await repo.find(mt, 'AccessToken', 'at-gone')).toBeUndefined();
    // Another tenant's rows are out of reach: the same ids there are untouched.
    expect(await repo.find(`${mt}-other`, 'AuthorizationCode', 'code-many')).toBeUndefined();
    await expect(repo.upsertMany('a:b', [{ model: 'Session', id: 'x', payload: {}, expiresAt: exp }])).rejects.toThrow(/invalid tenant/);
  });

  it('prunes expired members when an index is written', async () => {
    await redis.zadd(key('oidx:model:Grant'), nowSec() - 10, 'stale');
    await repo.upsert(t, 'Grant', 'fresh', {}, nowSec() + 60);
    expect(await redis.zrange(key('oidx:model:Grant'), 0, -1)).toEqual(['fresh']);
  });

  it("keeps a grant's set of artefacts bounded while they expire (a session renewed silently for hours), and never drops a live one", async () => {
    const gt = 'grant-prune';
    const gkey = (rest: string) => `${prefix}:${gt}:${rest}`;
    const exp = nowSec() + 3600;
    const live: string[] = [];
    // Another tenant's grant of the same id, whose records are gone: this tenant's pruning never reaches it.
    const other = `${gt}-other`;
    for (let i = 0; i < 40; i++) await repo.upsert(other, 'AccessToken', `at-${i}`, { grantId: 'g-long' }, exp);
    for (let i = 0; i < 40; i++) await redis.del(`${prefix}:${other}:oidc:AccessToken:at-${i}`);
    const otherSize = await redis.scard(`${prefix}:${other}:oidx:grant:g-long`);
    for (let i = 0; i < 600; i++) {
      // A code and its access token per renewal; Redis expires the code within a minute and, here,
      // all but every twentieth token (deleted as expiry would: no script runs for it).
      await repo.upsertMany(gt, [
        { model: 'AuthorizationCode', id: `code-${i}`, payload: { grantId: 'g-long' }, expiresAt: exp },
        { model: 'AccessToken', id: `at-${i}`, payload: { grantId: 'g-long' }, expiresAt: exp },
      ]);
      await redis.del(gkey(`oidc:AuthorizationCode:code-${i}`));
      if (i % 20 === 0) live.push(`AccessToken:at-${i}`);
      else await redis.del(gkey(`oidc:AccessToken:at-${i}`));
    }
    // A record that now carries another grant is not this grant's either.
    await repo.upsert(gt, 'RefreshToken', 'rt-moved', { grantId: 'g-long' }, exp);
    await redis.hset(gkey('oidc:RefreshToken:rt-moved'), 'g', 'g-other');
    const members = await redis.smembers(gkey('oidx:grant:g-long'));
    // 1,201 additions, 30 live: without pruning the set would hold all 1,201.
    expect(members.length).toBeLessThan(4 * live.length + GRANT_PRUNE.from);
    expect(members).toEqual(expect.arrayContaining(live));
    expect(await redis.scard(`${prefix}:${other}:oidx:grant:g-long`)).toBe(otherSize);
    // Revocation still reaches every live artefact, and only this grant's.
    await repo.revokeByGrantId(gt, 'g-long');
    for (const m of live) expect(await redis.exists(gkey(`oidc:${m}`))).toBe(0);
    expect(await redis.hget(gkey('oidc:RefreshToken:rt-moved'), 'g')).toBe('g-other');
    expect(await redis.exists(gkey('oidx:grant:g-long'))).toBe(0);
  });

  it("looks at a mostly live grant set again only once it has grown by half, and revocation removes that mark", async () => {
    const lt = 'grant-live';
    const lkey = (rest: string) => `${prefix}:${lt}:${rest}`;
    const exp = nowSec() + 3600;
    // A refresh token's rotations: each consumed one is kept until it expires, so all stay live.
    for (let i = 0; i < 100; i++) await repo.upsert(lt, 'RefreshToken', `rt-${i}`, { grantId: 'g-live' }, exp);
    expect(await redis.scard(lkey('oidx:grant:g-live'))).toBe(100);
    // Checks fall on every 8th size: the one at 40 found nothing to drop, so the next waits for 60
    // (checked at 64), that one for 96, and that one for 144. The mark lives no longer than the set.
    expect(await redis.get(lkey('oidx:grant-prune:g-live'))).toBe('144');
    expect(await redis.expiretime(lkey('oidx:grant-prune:g-live'))).toBeLessThanOrEqual(await redis.expiretime(lkey('oidx:grant:g-live')));
    await repo.revokeByGrantId(lt, 'g-live');
    expect(await redis.exists(lkey('oidx:grant:g-live'), lkey('oidx:grant-prune:g-live'), lkey('oidc:RefreshToken:rt-0'))).toBe(0);
  });

  it('refuses a tenant or model that could address another key space', async () => {
    await expect(repo.find('a:oidc:Session', 'Session', 'x')).rejects.toThrow(/invalid tenant/);
    await expect(repo.find(t, 'Session:x', 'y')).rejects.toThrow(/invalid oidc model/);
    await expect(repo.listSessions('a:b', {})).rejects.toThrow(/invalid tenant/);
  });

  it('fails fast with Unavailable (a 503 problem at the API) when Redis cannot be reached', async () => {
    const down = createRedis(`redis://127.0.0.1:${await freePort()}`, commandOptions('test-down'));
    try {
      const unreachable = new RedisOidcPayloads(down, { prefix });
      const started = Date.now();
      const err = await unreachable.find(t, 'Session', 'x').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Unavailable);
      expect(toProblem(err)).toMatchObject({ status: 503, type: 'urn:svc:error:unavailable' });
      await expect(unreachable.upsert(t, 'Session', 'x', {}, null)).rejects.toBeInstanceOf(Unavailable);
      await expect(unreachable.ping()).rejects.toBeInstanceOf(Unavailable);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      down.disconnect();
    }
  });
});
