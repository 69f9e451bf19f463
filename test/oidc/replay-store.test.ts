/**
 * ReplayStore without Redis (single instance): the in-process memo in front of the
 * ReplayDetection rows (quick-lru, per-entry expiry at the assertion's exp + tolerance).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { REPLAY_MODEL, ReplayStore } from '../../src/oidc/replay-store.js';
import type { OidcPayloadRepository, OidcPayloadRow } from '../../src/storage/types.js';

function fakeRepo() {
  const rows = new Map<string, OidcPayloadRow>();
  let failing = false;
  const repo = {
    async find(_tenant: string, model: string, id: string) {
      if (failing) throw new Error('storage down');
      return rows.get(`${model}:${id}`);
    },
    async upsert(_tenant: string, model: string, id: string, payload: Record<string, unknown>, expiresAt: number | null) {
      if (failing) throw new Error('storage down');
      rows.set(`${model}:${id}`, { payload, expires_at: expiresAt, consumed: false });
    },
  } as unknown as OidcPayloadRepository;
  return { repo, rows, fail: (v: boolean) => void (failing = v) };
}

const epoch = () => Math.floor(Date.now() / 1000);

afterEach(() => void vi.useRealTimers());

describe('ReplayStore (in memory + OIDC artefact storage)', () => {
  it('accepts a jti once, records a ReplayDetection row, and refuses it again', async () => {
    const { repo, rows } = fakeRepo();
    const store = new ReplayStore(repo, 'default');
    expect(await store.unique('client-a', 'j1', epoch() + 60)).toBe(true);
    expect(await store.unique('client-a', 'j1', epoch() + 60)).toBe(false);
    expect(await store.unique('client-b', 'j1', epoch() + 60)).toBe(true);
    expect([...rows.keys()].every((k) => k.startsWith(`${REPLAY_MODEL}:`))).toBe(true);
    expect(rows.size).toBe(2);
  });

  it('concurrent checks of one jti: exactly one passes', async () => {
    const { repo } = fakeRepo();
    const store = new ReplayStore(repo, 'default');
    const results = await Promise.all(Array.from({ length: 10 }, () => store.unique('c', 'same', epoch() + 60)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('refuses a jti another store (instance, oidc-provider) recorded', async () => {
    const { repo } = fakeRepo();
    expect(await new ReplayStore(repo, 'default').unique('c', 'j', epoch() + 60)).toBe(true);
    expect(await new ReplayStore(repo, 'default').unique('c', 'j', epoch() + 60)).toBe(false);
  });

  it('forgets a jti the storage failed to record, so it can be tried again', async () => {
    const { repo, fail } = fakeRepo();
    const store = new ReplayStore(repo, 'default');
    fail(true);
    await expect(store.unique('c', 'j', epoch() + 60)).rejects.toThrow('storage down');
    fail(false);
    expect(await store.unique('c', 'j', epoch() + 60)).toBe(true);
  });

  it('the memo entry expires with the assertion', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { repo, rows } = fakeRepo();
    const store = new ReplayStore(repo, 'default');
    expect(await store.unique('c', 'j', epoch() + 5)).toBe(true);
    vi.setSystemTime(Date.now() + 4000);
    rows.clear();
    expect(await store.unique('c', 'j', epoch() + 5)).toBe(false); // memo still holds it
    vi.setSystemTime(Date.now() + 2000);
    expect(await store.unique('c', 'j', epoch() + 5)).toBe(true); // memo expired, row gone
  });
});
