/** ExpirySweeper: the periodic removal of expired OIDC artefacts (SQL backends). */
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
