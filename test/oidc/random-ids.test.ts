/**
 * Token values (src/oidc/random-ids.ts): pooled random values, and the time-ordered values access
 * tokens and codes are stored under: oidc-provider's opaque shape (43 base64url characters), 210
 * random bits after the clock, and an order that follows the issue time, millisecond by
 * millisecond, as SQLite compares text (byte by byte).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pooledRandom, timeOrderedValue } from '../../src/oidc/random-ids.js';

afterEach(() => {
  vi.useRealTimers();
});

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('timeOrderedValue', () => {
  const next = timeOrderedValue(pooledRandom(27, 128));

  it('gives 43 base64url characters, like oidc-provider opaque values', () => {
    for (let i = 0; i < 200; i++) expect(next()).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('sorts values by issue time across every digit of the clock', () => {
    vi.useFakeTimers();
    // Steps that roll over each of the prefix's low digits (1 ms, 64 ms, 4,096 ms, ...) and years.
    const times = [0, 1, 63, 64, 65, 4095, 4096, 262_143, 262_144, 1_795_000_000_000, 1_795_000_000_001, 1_795_000_004_096, 4_102_444_800_000];
    const values = times.map((t) => {
      vi.setSystemTime(t);
      return next();
    });
    const sorted = [...values].sort(byteOrder);
    expect(sorted).toEqual(values);
  });

  it('shares the clock prefix within a millisecond, and keeps the rest random', () => {
    vi.useFakeTimers();
    vi.setSystemTime(1_795_000_000_123);
    const values = Array.from({ length: 1000 }, () => next());
    expect(new Set(values.map((v) => v.slice(0, 8))).size).toBe(1);
    expect(new Set(values.map((v) => v.slice(8))).size).toBe(1000);
    // Every character position of the random part takes many values (no stuck padding bits).
    for (let i = 8; i < 43; i++) expect(new Set(values.map((v) => v[i])).size).toBeGreaterThan(40);
  });
});

describe('pooledRandom', () => {
  it('gives distinct base64url values of the asked size from one pooled buffer', () => {
    const next = pooledRandom(32, 4);
    const values = Array.from({ length: 50 }, () => next());
    expect(new Set(values).size).toBe(50);
    for (const v of values) expect(v).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
