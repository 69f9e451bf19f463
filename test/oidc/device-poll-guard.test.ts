/**
 * The device code polling guard (RFC 8628 3.5 slow_down) on its own, with its quick-lru memory of
 * polls: faster than the interval answers slow_down and adds 5 s; the memory of a code expires
 * 1 h after its last poll. (test/e2e/device-flow.test.ts drives it through a browser.)
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { devicePollGuard } from '../../src/oidc/device-and-auth.js';
import type { HttpRequest } from '../../src/http/types.js';
import type { OidcPayloadRepository } from '../../src/storage/types.js';

const poll = (code: string): HttpRequest => ({
  id: 'r',
  method: 'POST',
  path: '/oidc/v1/token',
  rawQuery: '',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  ip: '127.0.0.1',
  body: Buffer.from(new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: code }).toString()),
  params: {},
});

function host(pending: boolean) {
  const oidc = { find: async () => ({ payload: pending ? {} : { accountId: 'u' }, expires_at: null, consumed: false }) } as unknown as OidcPayloadRepository;
  return { tenant: 'default', config: { oidc: { device_poll_interval: 5 } }, ctx: { storage: { oidc } } };
}

afterEach(() => void vi.useRealTimers());

describe('devicePollGuard', () => {
  it('lets the first poll and polls at the interval through, slows down faster ones by 5 s each', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const guard = devicePollGuard();
    const h = host(true);
    expect(await guard.check(h, poll('c1'))).toBeUndefined();
    vi.setSystemTime(Date.now() + 1000);
    const slow = await guard.check(h, poll('c1'));
    expect(slow?.status).toBe(400);
    expect(JSON.parse(String(slow?.body))).toMatchObject({ error: 'slow_down' });
    expect(String(slow?.body)).toContain('10 seconds');
    // Now 10 s: 6 s later is still too fast (and adds 5 more).
    vi.setSystemTime(Date.now() + 6000);
    expect(String((await guard.check(h, poll('c1')))?.body)).toContain('15 seconds');
    vi.setSystemTime(Date.now() + 15_000);
    expect(await guard.check(h, poll('c1'))).toBeUndefined();
    // Another code has its own interval.
    expect(await guard.check(h, poll('c2'))).toBeUndefined();
  });

  it('does not slow down a code that is no longer pending', async () => {
    const guard = devicePollGuard();
    const h = host(false);
    expect(await guard.check(h, poll('c'))).toBeUndefined();
    expect(await guard.check(h, poll('c'))).toBeUndefined();
  });

  it('forgets a code 1 h after its last poll', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const guard = devicePollGuard();
    const h = host(true);
    expect(await guard.check(h, poll('c'))).toBeUndefined();
    vi.setSystemTime(Date.now() + 1000);
    expect((await guard.check(h, poll('c')))?.status).toBe(400); // interval now 10 s
    vi.setSystemTime(Date.now() + 3600_000 + 1);
    // Forgotten: a first poll again, then the configured 5 s interval (not 10 s).
    expect(await guard.check(h, poll('c'))).toBeUndefined();
    vi.setSystemTime(Date.now() + 6000);
    expect(await guard.check(h, poll('c'))).toBeUndefined();
  });
});
