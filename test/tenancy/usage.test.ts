/**
 * Client usage counters written behind (src/tenancy/usage.ts), on a real SQLite storage: counts
 * gather per (tenant, client) for USAGE_FLUSH_MS and go out as one UPDATE per client used, however
 * many tokens it got; statistics meanwhile add what is not written yet; close writes the rest.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UsageEntry } from '../../src/storage/types.js';
import { USAGE_FLUSH_MS, UsageRecorder } from '../../src/tenancy/usage.js';
import { clientRecord, openTempStorage, type TempStorage } from '../helpers/storage.js';

let t: TempStorage;
/** Every batch the recorder wrote, as it reached the repository. */
let batches: UsageEntry[][];
let recorder: UsageRecorder;
const warn = vi.fn();

beforeEach(async () => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
  t = openTempStorage();
  await t.storage.clients.create('t1', clientRecord('a'));
  await t.storage.clients.create('t1', clientRecord('b'));
  await t.storage.clients.create('t2', clientRecord('a'));
  batches = [];
  const clients = t.storage.clients;
  recorder = new UsageRecorder(
    {
      recordUsageBatch: (entries) => {
        batches.push([...entries]);
        return clients.recordUsageBatch(entries);
      },
    },
    { warn },
  );
});

afterEach(async () => {
  await recorder.close();
  vi.useRealTimers();
  await t.close();
});

const issued = async (tenant: string, id: string) => (await t.storage.clients.get(tenant, id))!.tokens_issued;

describe('client usage counters', () => {
  it('write every USAGE_FLUSH_MS, one entry per client used however many tokens it got', async () => {
    for (let i = 0; i < 40; i++) recorder.record('t1', 'a');
    recorder.record('t1', 'b');
    recorder.record('t2', 'a');
    // Just before the interval ends nothing is written yet.
    await vi.advanceTimersByTimeAsync(USAGE_FLUSH_MS - 1);
    expect(batches).toEqual([]);
    expect(await issued('t1', 'a')).toBe(0);

    await vi.advanceTimersByTimeAsync(1);
    await recorder.flush(); // waits for the interval's write (nothing new to write)
    expect(batches).toHaveLength(1);
    expect(batches[0]!.map((e) => [e.tenant, e.clientId, e.tokens])).toEqual([
      ['t1', 'a', 40],
      ['t1', 'b', 1],
      ['t2', 'a', 1],
    ]);
    expect(await issued('t1', 'a')).toBe(40);
    expect(await issued('t2', 'a')).toBe(1);
    // The time of the last use, not of the write.
    expect((await t.storage.clients.get('t1', 'b'))!.last_used_at).toBe(new Date(Date.now() - USAGE_FLUSH_MS).toISOString());
  });

  it('count the unwritten tokens in pending, per tenant and client, until they are written', async () => {
    recorder.record('t1', 'a');
    recorder.record('t1', 'a');
    expect(recorder.pending('t1', 'a')).toBe(2);
    expect(recorder.pending('t2', 'a')).toBe(0);
    await vi.advanceTimersByTimeAsync(USAGE_FLUSH_MS);
    await recorder.flush();
    expect(recorder.pending('t1', 'a')).toBe(0);
    expect(await issued('t1', 'a')).toBe(2);
  });

  it('write what is left on close (a graceful stop loses nothing)', async () => {
    recorder.record('t2', 'a');
    recorder.record('t2', 'a');
    recorder.record('t2', 'a');
    await recorder.close();
    expect(await issued('t2', 'a')).toBe(3);
    expect(warn).not.toHaveBeenCalled();
  });
});
