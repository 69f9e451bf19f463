import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryAttemptCounter } from '../../src/oidc/attempt-counter.js';

afterEach(() => vi.useRealTimers());

describe('MemoryAttemptCounter.peekNow (the throttle checks every token request with it)', () => {
  it('answers what peek answers, without counting, per tenant, kind, subject and window', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:10Z') });
    const c = new MemoryAttemptCounter();
    expect(c.peekNow('t', 'client-auth', 'a', 60)).toBe(0);
    await c.hit('t', 'client-auth', 'a', 60);
    await c.hit('t', 'client-auth', 'a', 60);
    expect(c.peekNow('t', 'client-auth', 'a', 60)).toBe(2);
    expect(c.peekNow('t', 'client-auth', 'a', 60)).toBe(await c.peek('t', 'client-auth', 'a', 60));
    expect(c.peekNow('t', 'client-auth', 'a', 60)).toBe(2); // peeking counts nothing
    expect(c.peekNow('u', 'client-auth', 'a', 60)).toBe(0);
    expect(c.peekNow('t', 'client-auth-ip', 'a', 60)).toBe(0);
    expect(c.peekNow('t', 'client-auth', 'b', 60)).toBe(0);
    vi.setSystemTime(new Date('2026-01-01T00:01:00Z')); // the next 60 s window
    expect(c.peekNow('t', 'client-auth', 'a', 60)).toBe(0);
  });
});
