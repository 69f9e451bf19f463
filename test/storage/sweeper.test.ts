/** ExpirySweeper: the periodic removal of expired OIDC artefacts and account tokens (SQL backends). */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ExpirySweeper, SWEEP_INTERVAL_MS } from '../../src/storage/sweeper.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

const nowSec = () => Math.floor(Date.now() / 1000);
const log = () => ({ info: vi.fn(), warn: vi.fn(), debug: vi.fn() });

describe('ExpirySweeper', () => {
  let temp: TempStorage;
  beforeEach(() => {
    temp = openTempStorage();
  });
  afterEach(async () => {
    vi.useRealTimers();
    await temp.close();
  });

  it('sweeps every 10 minutes by default', () => {
    expect(SWEEP_INTERVAL_MS).toBe(600_000);
  });

  it('deletes the expired artefacts, keeps the live ones, and logs the count', async () => {
    const oidc = temp.storage.oidc;
    await oidc.upsert('default', 'AccessToken', 'live', { jti: 'live' }, nowSec() + 600);
    await oidc.upsert('default', 'AccessToken', 'forever', { jti: 'forever' }, null);
    await oidc.upsert('default', 'AccessToken', 'old-1', { jti: 'old-1' }, nowSec() + 600);
    await oidc.upsert('default', 'AccessToken', 'old-2', { jti: 'old-2' }, nowSec() + 600);
    temp.storage.db.prepare("UPDATE oidc_payloads SET expires_at = ? WHERE id LIKE 'old-%'").run(nowSec() - 10);
    const l = log();
    const sweeper = new ExpirySweeper(oidc, l);
    expect(await sweeper.sweep()).toBe(2);
    expect(l.info).toHaveBeenCalledWith({ removed: 2 }, 'expired OIDC artefacts swept');
    expect(await oidc.find('default', 'AccessToken', 'live')).toBeDefined();
    expect(await oidc.find('default', 'AccessToken', 'forever')).toBeDefined();
    const rows = temp.storage.db.prepare('SELECT id FROM oidc_payloads ORDER BY id').all() as Array<{ id: string }>;
    expect(rows.map((r) => r.id)).toEqual(['forever', 'live']);
    // Concurrent or repeated sweeps are harmless.
    expect(await Promise.all([sweeper.sweep(), new ExpirySweeper(oidc, l).sweep()])).toEqual([0, 0]);
  });

  it('deletes expired account tokens too, and only those when the OIDC artefacts live in Redis', async () => {
    const tokens = temp.storage.accountTokens;
    const iso = (offsetSeconds: number) => new Date(Date.now() + offsetSeconds * 1000).toISOString();
    const token = (hash: string, expires: string) => ({ token_hash: hash, kind: 'verify_email' as const, user_id: 'u1', email: 'ada@example.com', data: null, created_at: iso(-7200), expires_at: expires, used_at: null });
    await tokens.create('default', token('dead', iso(-10)));
    await tokens.create('default', token('live', iso(600)));
    await temp.storage.oidc.upsert('default', 'AccessToken', 'old', { jti: 'old' }, nowSec() + 600);
    temp.storage.db.prepare("UPDATE oidc_payloads SET expires_at = ? WHERE id = 'old'").run(nowSec() - 10);
    const l = log();
    // As app.ts builds it with REDIS_URL set: no OIDC repository, account tokens still swept.
    expect(await new ExpirySweeper(undefined, l, SWEEP_INTERVAL_MS, tokens).sweep()).toBe(1);
    expect(l.info).toHaveBeenCalledWith({ removed: 1 }, 'expired account tokens swept');
    expect(temp.storage.db.prepare('SELECT token_hash FROM account_tokens').pluck().all()).toEqual(['live']);
    expect(temp.storage.db.prepare('SELECT id FROM oidc_payloads').pluck().all()).toEqual(['old']);
  });

  it('keeps sweeping one kind when the other fails', async () => {
    const l = log();
    const failing = { sweepExpired: vi.fn().mockRejectedValue(new Error('database is away')) };
    const working = { sweepExpired: vi.fn().mockResolvedValue(2) };
    expect(await new ExpirySweeper(failing, l, 1000, working).sweep()).toBe(2);
    expect(l.warn).toHaveBeenCalledWith(expect.anything(), 'sweeping expired OIDC artefacts failed; retrying at the next interval');
    expect(working.sweepExpired).toHaveBeenCalledWith(expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/));
  });

  it('runs on its interval after start, survives a failing sweep, and stops', async () => {
    vi.useFakeTimers();
    const sweepExpired = vi.fn().mockRejectedValueOnce(new Error('database is away')).mockResolvedValue(3);
    const l = log();
    const sweeper = new ExpirySweeper({ sweepExpired }, l, 1000);
    sweeper.start();
    // The first sweep comes within the first interval (spread between instances).
    await vi.advanceTimersByTimeAsync(1000);
    expect(sweepExpired).toHaveBeenCalledTimes(1);
    expect(l.warn).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(sweepExpired).toHaveBeenCalledTimes(2);
    expect(sweepExpired.mock.calls[1]![0]).toEqual(expect.any(Number));
    expect(l.info).toHaveBeenCalledWith({ removed: 3 }, 'expired OIDC artefacts swept');
    await sweeper.stop();
    await vi.advanceTimersByTimeAsync(5000);
    expect(sweepExpired).toHaveBeenCalledTimes(2);
  });
});
