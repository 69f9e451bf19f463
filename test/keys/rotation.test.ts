/**
 * Key lifecycle against a real SQLite file: active -> expiring -> retired, the overlap window,
 * keys marked for retirement, the rotation event, two instances rotating at once, and the keys of
 * an algorithm taken out of security.key_store.algorithms.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/audit/audit-log.js';
import { loadConfig } from '../../src/config/index.js';
import { InProcessBus, rotationChannel } from '../../src/events/bus.js';
import { KeySet, ensureKeys, newKeyRecord } from '../../src/keys/keystore.js';
import { demoteUnconfigured, markForRetirement, retireExpired, rotate, rotateIfDue, type KeyLifecycleDeps } from '../../src/keys/rotation.js';
import { RotationScheduler } from '../../src/keys/scheduler.js';
import { Sealer } from '../../src/keys/sealer.js';
import { SqliteStorage } from '../../src/storage/sqlite/index.js';
import type { SigningKeyRecord } from '../../src/storage/types.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';
import { onChannel } from '../helpers/bus.js';

const TENANT = 'default';
const OVERLAP = 600;
const DAY = 86_400_000;
const T0 = new Date('2026-03-01T12:00:00.000Z');
const plus = (ms: number, from = T0) => new Date(from.getTime() + ms);

const config = loadConfig({
  SECURITY_KEY_STORE_ALGORITHMS: 'ES256,EdDSA',
  SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS: String(OVERLAP),
  SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS: '90',
  SVC_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
});
const sealer = new Sealer(Buffer.alloc(32, 3));
const log = pino({ level: 'silent' });

let temp: TempStorage;
let events: InProcessBus;
let deps: KeyLifecycleDeps;

const depsFor = (storage: SqliteStorage): KeyLifecycleDeps => ({ storage, sealer, config, events, log });
const keys = () => deps.storage.keys.list(TENANT);
const byKid = async () => new Map((await keys()).map((k) => [k.kid, k]));
const keySet = async () => new KeySet(await keys(), sealer, TENANT, config.security.key_store.algorithms);
const publishedKids = async () => (JSON.parse((await keySet()).jwksBody.toString()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid).sort();

/** Keys of a generation created at `when` (to make a tenant's keys look old). */
async function seed(when: Date): Promise<SigningKeyRecord[]> {
  const records = await Promise.all(config.security.key_store.algorithms.map((alg) => newKeyRecord(alg, sealer, TENANT, when)));
  await deps.storage.keys.insert(TENANT, records);
  return records;
}

beforeEach(() => {
  temp = openTempStorage();
  events = new InProcessBus();
  deps = depsFor(temp.storage);
});
afterEach(async () => {
  await events.close();
  await temp.close();
});

describe('rotate', () => {
  it('promotes a new key per algorithm and moves the previous active keys to expiring for the overlap window', async () => {
    const first = await ensureKeys(deps.storage.keys, TENANT, config.security.key_store.algorithms, sealer);
    expect(first.map((k) => k.status)).toEqual(['active', 'active']);

    const result = await rotate(deps, TENANT, T0);
    expect(result.promoted).toBe(2);
    expect(result.kids).toHaveLength(2);
    expect(result.expiring.sort()).toEqual(first.map((k) => k.kid).sort());

    const all = await byKid();
    for (const old of first) {
      const k = all.get(old.kid)!;
      expect(k).toMatchObject({ status: 'expiring', promoted: false, rotated_at: T0.toISOString(), expires_at: plus(OVERLAP * 1000).toISOString() });
    }
    for (const kid of result.kids) expect(all.get(kid)).toMatchObject({ status: 'active', promoted: true, rotated_at: null, expires_at: null });

    // Old and new keys are both published and verify; only the new ones sign.
    const set = await keySet();
    expect(await publishedKids()).toEqual([...first.map((k) => k.kid), ...result.kids].sort());
    for (const old of first) expect(set.verifying.has(old.kid)).toBe(true);
    expect([...set.signing.values()].map((k) => k.kid).sort()).toEqual([...result.kids].sort());
  });

  it('retires expiring keys past their window at the next rotation', async () => {
    const gen1 = await seed(plus(-DAY));
    const r2 = await rotate(deps, TENANT, T0);
    const r3 = await rotate(deps, TENANT, plus(OVERLAP * 1000 + 1));
    expect(r3.retired.sort()).toEqual(gen1.map((k) => k.kid).sort());
    expect(r3.expiring.sort()).toEqual([...r2.kids].sort());
    const all = await byKid();
    for (const k of gen1) expect(all.get(k.kid)).toMatchObject({ status: 'retired', promoted: false, expires_at: plus(OVERLAP * 1000).toISOString() });
    expect(await publishedKids()).toEqual([...r2.kids, ...r3.kids].sort());
  });

  it('publishes the jwks:rotated event with exactly tenant, kids, promoted and at', async () => {
    await seed(plus(-DAY));
    const received: unknown[] = [];
    onChannel(events, rotationChannel(TENANT), (p) => received.push(p));
    onChannel(events, rotationChannel('other'), () => received.push('wrong channel'));
    const result = await rotate(deps, TENANT, T0);
    await new Promise((r) => setImmediate(r));
    expect(received).toEqual([{ tenant: TENANT, kids: result.kids, promoted: 2, at: T0.toISOString() }]);
  });
});

describe('retireExpired and the overlap window', () => {
  it('keeps expiring keys until the window ends, then retires them and drops them from the JWKS', async () => {
    const gen1 = await seed(plus(-DAY));
    const r = await rotate(deps, TENANT, T0);
    expect((await retireExpired(deps, TENANT, plus(OVERLAP * 1000 - 1))).retired).toBe(0);
    expect(await publishedKids()).toHaveLength(4);

    await new Promise((res) => setImmediate(res)); // the rotation's own event is delivered first
    const received: unknown[] = [];
    onChannel(events, rotationChannel(TENANT), (p) => received.push(p));
    const done = await retireExpired(deps, TENANT, plus(OVERLAP * 1000));
    expect(done).toEqual({ retired: 2, kids: expect.arrayContaining(gen1.map((k) => k.kid)), promoted: [] });
    expect(await publishedKids()).toEqual([...r.kids].sort());
    const set = await keySet();
    for (const k of gen1) expect(set.verifying.has(k.kid)).toBe(false);
    await new Promise((res) => setImmediate(res));
    expect(received).toEqual([{ tenant: TENANT, kids: done.kids, promoted: 0, at: plus(OVERLAP * 1000).toISOString() }]);

    // Nothing left to do: no change, no event.
    expect((await retireExpired(deps, TENANT, plus(OVERLAP * 2000))).retired).toBe(0);
    await new Promise((res) => setImmediate(res));
    expect(received).toHaveLength(1);
  });
});

describe('markForRetirement', () => {
  it('answers not_found and already_retired, and marks anything else without unpublishing it', async () => {
    const gen1 = await seed(plus(-DAY));
    expect(await markForRetirement(deps, TENANT, 'no-such-kid')).toEqual({ outcome: 'not_found' });

    await rotate(deps, TENANT, T0);
    const expiring = gen1[0]!;
    expect(await markForRetirement(deps, TENANT, expiring.kid)).toEqual({ outcome: 'marked', kid: expiring.kid, current_status: 'expiring' });
    expect((await byKid()).get(expiring.kid)).toMatchObject({ status: 'expiring', retire_requested: true });
    // CONTRACT.md: a marked key leaves the JWKS when it is retired, not when it is marked.
    expect(await publishedKids()).toContain(expiring.kid);

    // retire-expired retires it although its window is still running; the unmarked one stays.
    const r = await retireExpired(deps, TENANT, plus(1000));
    expect(r.kids).toEqual([expiring.kid]);
    expect(await publishedKids()).not.toContain(expiring.kid);
    expect(await publishedKids()).toContain(gen1[1]!.kid);
    expect(await markForRetirement(deps, TENANT, expiring.kid)).toEqual({ outcome: 'already_retired', kid: expiring.kid });
  });

  it('retires a marked active key at the next rotation directly, without an overlap window', async () => {
    const gen1 = await seed(plus(-DAY));
    const marked = gen1[0]!;
    expect(await markForRetirement(deps, TENANT, marked.kid)).toMatchObject({ outcome: 'marked', current_status: 'active' });
    const r = await rotate(deps, TENANT, T0);
    expect(r.retired).toEqual([marked.kid]);
    expect(r.expiring).toEqual([gen1[1]!.kid]);
    expect((await byKid()).get(marked.kid)).toMatchObject({ status: 'retired', expires_at: T0.toISOString() });
    expect(await publishedKids()).not.toContain(marked.kid);
  });

  it('replaces a marked current key at retire-expired so the tenant can still sign with that algorithm', async () => {
    const gen1 = await seed(plus(-DAY));
    const marked = gen1.find((k) => k.alg === 'ES256')!;
    await markForRetirement(deps, TENANT, marked.kid);
    const r = await retireExpired(deps, TENANT, T0);
    expect(r.retired).toBe(1);
    expect(r.promoted).toHaveLength(1);
    const replacement = (await byKid()).get(r.promoted[0]!)!;
    expect(replacement).toMatchObject({ alg: 'ES256', status: 'active', promoted: true });
    const set = await keySet();
    expect(set.signingKey('ES256').kid).toBe(replacement.kid);
    expect(set.verifying.has(marked.kid)).toBe(false);
  });
});

describe('concurrency', () => {
  it('serialises concurrent rotations of one tenant: each completes and exactly one key per algorithm stays active', async () => {
    await seed(plus(-DAY));
    const results = await Promise.all([rotate(deps, TENANT, T0), rotate(deps, TENANT, T0), rotate(deps, TENANT, T0)]);
    expect(results.map((r) => r.promoted)).toEqual([2, 2, 2]);
    const all = await keys();
    for (const alg of ['ES256', 'EdDSA']) expect(all.filter((k) => k.alg === alg && k.status === 'active')).toHaveLength(1);
    expect(all.filter((k) => k.status === 'expiring')).toHaveLength(6);
  });

  it('rotates once when two instances (two connections to one database) find the keys due at the same time', async () => {
    await seed(plus(-100 * DAY));
    const second = SqliteStorage.open(temp.path);
    try {
      const [a, b] = await Promise.all([rotateIfDue(deps, TENANT, T0), rotateIfDue(depsFor(second), TENANT, T0)]);
      expect([a, b].filter((r) => r !== null)).toHaveLength(1);
      const all = await keys();
      expect(all.filter((k) => k.status === 'active')).toHaveLength(2);
      expect(all.filter((k) => k.status === 'expiring')).toHaveLength(2);
    } finally {
      await second.close();
    }
  });

  it('does not rotate keys younger than the interval, nor a tenant that has no keys yet', async () => {
    expect(await rotateIfDue(deps, TENANT, T0)).toBeNull();
    expect(await keys()).toHaveLength(0);
    await seed(plus(-89 * DAY));
    expect(await rotateIfDue(deps, TENANT, T0)).toBeNull();
    expect(await rotateIfDue(deps, TENANT, plus(DAY))).not.toBeNull();
  });
});

describe('demoteUnconfigured (an algorithm removed from security.key_store.algorithms)', () => {
  const ALGS = config.security.key_store.algorithms;
  const auditTypes = async (storage = temp.storage) => (await storage.audit.list(TENANT, {}, { limit: 10, include_count: false })).items.filter((e) => e.type === 'jwks.demoted');

  /** The configured generation plus an active RS256 key: the store as the previous settings left it. */
  async function seedWithRemoved(): Promise<{ current: SigningKeyRecord[]; removed: SigningKeyRecord }> {
    const current = await seed(plus(-DAY));
    const removed = await newKeyRecord('RS256', sealer, TENANT, plus(-DAY));
    await deps.storage.keys.insert(TENANT, [removed]);
    return { current, removed };
  }

  it('moves active keys of an unconfigured algorithm to expiring for one overlap window: they stop signing, keep verifying, then retire', async () => {
    const { current, removed } = await seedWithRemoved();
    const received: unknown[] = [];
    onChannel(events, rotationChannel(TENANT), (p) => received.push(p));
    const audit = new AuditLog(temp.storage, log);

    const result = await demoteUnconfigured({ ...deps, audit }, TENANT, ALGS, await keys(), T0);
    expect(result.demoted.map((k) => k.kid)).toEqual([removed.kid]);
    const all = await byKid();
    expect(all.get(removed.kid)).toMatchObject({ status: 'expiring', promoted: false, rotated_at: T0.toISOString(), expires_at: plus(OVERLAP * 1000).toISOString() });
    // The configured keys are untouched: no new key, no rotation.
    for (const k of current) expect(all.get(k.kid)).toMatchObject({ status: 'active', promoted: true, rotated_at: null });
    expect(result.keys.map((k) => k.kid).sort()).toEqual([...all.keys()].sort());

    const set = new KeySet(result.keys, sealer, TENANT, ALGS);
    expect([...set.signing.keys()].sort()).toEqual(['ES256', 'EdDSA']);
    expect(set.verifying.has(removed.kid)).toBe(true);
    expect(await publishedKids()).toContain(removed.kid);

    await new Promise((r) => setImmediate(r));
    expect(received).toEqual([{ tenant: TENANT, kids: [removed.kid], promoted: 0, at: T0.toISOString() }]);
    expect((await auditTypes()).map((e) => e.details)).toEqual([{ trigger: 'algorithms', kids: [removed.kid], algorithms: ['RS256'], expires_at: plus(OVERLAP * 1000).toISOString() }]);

    // Done once: a later load finds nothing to do, says nothing and writes nothing.
    const again = await demoteUnconfigured({ ...deps, audit }, TENANT, ALGS, await keys(), plus(1000));
    expect(again.demoted).toEqual([]);
    expect((await byKid()).get(removed.kid)!.rotated_at).toBe(T0.toISOString());
    await new Promise((r) => setImmediate(r));
    expect(received).toHaveLength(1);

    // The window ends: retired like any rotated-out key, and gone from the JWKS.
    expect((await retireExpired(deps, TENANT, plus(OVERLAP * 1000))).kids).toEqual([removed.kid]);
    expect(await publishedKids()).toEqual(current.map((k) => k.kid).sort());
  });

  it('leaves an expiring key of the removed algorithm on its own window, and changes nothing when every active key is configured', async () => {
    const { removed } = await seedWithRemoved();
    await rotate({ ...deps, config: loadConfig({ SECURITY_KEY_STORE_ALGORITHMS: 'ES256,EdDSA,RS256', SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS: String(OVERLAP), SVC_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64') }) }, TENANT, plus(-1000));
    const rotatedOut = (await byKid()).get(removed.kid)!;
    expect(rotatedOut.status).toBe('expiring');
    const audit = new AuditLog(temp.storage, log);
    const result = await demoteUnconfigured({ ...deps, audit }, TENANT, ALGS, await keys(), T0);
    // Only the RS256 key the rotation promoted is demoted; the rotated-out one keeps its window.
    expect(result.demoted.map((k) => k.alg)).toEqual(['RS256']);
    expect((await byKid()).get(removed.kid)).toEqual(rotatedOut);

    const list = await keys();
    expect((await demoteUnconfigured({ ...deps, audit }, TENANT, ALGS, list, T0)).keys).toBe(list);
  });

  it('demotes once when a second instance read the same keys before the first wrote (the re-check inside the transaction)', async () => {
    const { removed } = await seedWithRemoved();
    const stale = await keys();
    // Another connection to the same file, as another instance. One after the other: two SQLite
    // connections of one process would block each other's event loop (the concurrent case runs
    // on PostgreSQL, test/e2e/key-algorithms-postgresql.test.ts).
    const second = SqliteStorage.open(temp.path);
    try {
      const a = await demoteUnconfigured({ ...deps, audit: new AuditLog(temp.storage, log) }, TENANT, ALGS, stale, T0);
      const b = await demoteUnconfigured({ ...depsFor(second), audit: new AuditLog(second, log) }, TENANT, ALGS, stale, plus(500));
      expect([a.demoted.length, b.demoted.length]).toEqual([1, 0]);
      // Both hand back the keys as stored: the demoted key as its one writer left it.
      for (const r of [a, b]) expect(r.keys.find((k) => k.kid === removed.kid)).toMatchObject({ status: 'expiring', rotated_at: T0.toISOString() });
      expect(await auditTypes()).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});

describe('RotationScheduler', () => {
  it('rotates due tenants, retires expired keys, audits both and wakes up at the end of the next window', async () => {
    await seed(plus(-100 * DAY));
    const audit = new AuditLog(temp.storage, log);
    const scheduler = new RotationScheduler({ ...deps, audit }, () => ['acme'], 3_600_000);
    try {
      const first = await scheduler.tick(T0);
      expect(first.rotated).toEqual([TENANT]);
      // The old keys expire in OVERLAP seconds: the next check comes then, not in an hour.
      expect(first.nextInMs).toBe(OVERLAP * 1000 + 1000);

      const second = await scheduler.tick(plus(OVERLAP * 1000));
      expect(second).toMatchObject({ rotated: [], retired: { [TENANT]: 2 }, nextInMs: 3_600_000 });
      const types = (await temp.storage.audit.list(TENANT, {}, { limit: 10, include_count: false })).items.map((e) => e.type);
      expect(types.sort()).toEqual(['jwks.retired', 'jwks.rotated']);
    } finally {
      await scheduler.stop();
    }
  });
});
