import { describe, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/audit/audit-log.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('timeOrderedId (audit entry ids)', () => {
  it('makes UUIDv7 strings carrying the millisecond', () => {
    const now = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const id = timeOrderedId(now);
    expect(id).toMatch(UUID_V7);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now);
  });

  it('sorts in creation order within one millisecond and across the random pool refills', () => {
    const now = Date.now() + 10_000;
    // 1,000 ids use the 16 random bytes of each id and so refill the 4 KiB pool several times.
    const ids = Array.from({ length: 1000 }, (_, i) => timeOrderedId(now + Math.floor(i / 400)));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(UUID_V7);
  });

  it('keeps the random part random: no two ids of different milliseconds share it', () => {
    const tails = new Set(Array.from({ length: 500 }, (_, i) => timeOrderedId(1_700_000_000_000 + i).slice(19)));
    expect(tails.size).toBe(500);
  });
});
