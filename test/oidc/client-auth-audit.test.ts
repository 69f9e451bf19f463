/**
 * The bounds of the failed-client-authentication audit (src/oidc/client-auth-audit.ts): entries
 * only for failures counted within the throttle's limits, one throttled entry at each limit, and a
 * failure naming no client logged (not audited) at most twice a minute per tenant.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AppContext } from '../../src/context.js';
import { afterAnswerSettled } from '../../src/http/after-answer.js';
import { auditClientAuthFailure, type CountedFailure } from '../../src/oidc/client-auth-audit.js';

const LIMITS = { perSource: 20, perClient: 600, windowSeconds: 60 };

function fakeContext() {
  const record = vi.fn(async (_tenant: string, _event: { type: string; details?: Record<string, unknown> }) => ({}));
  const warn = vi.fn();
  const ctx = { audit: { record }, log: { warn, error: vi.fn() } } as unknown as AppContext;
  return { ctx, record, warn };
}

const failure = (over: Partial<CountedFailure> = {}): CountedFailure => ({
  tenant: 'acme',
  clientId: 'client-1',
  ip: '192.0.2.7',
  userAgent: 'ua',
  endpoint: 'token',
  reason: 'wrong_secret',
  detail: 'invalid secret provided',
  exists: true,
  perSource: 1,
  perClient: 1,
  ...over,
});

describe('auditClientAuthFailure', () => {
  afterEach(() => vi.useRealTimers());

  it('writes one client_auth_failed entry per counted failure within the limits, after the answer', async () => {
    const { ctx, record } = fakeContext();
    auditClientAuthFailure(ctx, failure(), LIMITS);
    expect(record).not.toHaveBeenCalled(); // not on the request path
    await afterAnswerSettled();
    expect(record).toHaveBeenCalledTimes(1);
    expect(record.mock.calls[0]![1]).toEqual({
      type: 'client_auth_failed',
      status: 'failed',
      client_id: 'client-1',
      ip_address: '192.0.2.7',
      user_agent: 'ua',
      details: { client_id: 'client-1', endpoint: 'token', reason: 'wrong_secret', detail: 'invalid secret provided' },
    });
  });

  it('adds one client_auth_throttled entry at each limit, and writes nothing past the limits or when not counted', async () => {
    const { ctx, record } = fakeContext();
    auditClientAuthFailure(ctx, failure({ perSource: 20, perClient: 40 }), LIMITS);
    await afterAnswerSettled();
    expect(record.mock.calls.map((c) => [c[1].type, c[1].details?.scope])).toEqual([
      ['client_auth_failed', undefined],
      ['client_auth_throttled', 'client_and_address'],
    ]);
    record.mockClear();
    auditClientAuthFailure(ctx, failure({ perSource: 3, perClient: 600 }), LIMITS);
    await afterAnswerSettled();
    expect(record.mock.calls.map((c) => [c[1].type, c[1].details?.scope])).toEqual([
      ['client_auth_failed', undefined],
      ['client_auth_throttled', 'client'],
    ]);
    record.mockClear();
    // A burst past the limits (counted after the check let it through), or counters unavailable (0).
    for (const counts of [{ perSource: 21, perClient: 50 }, { perSource: 5, perClient: 601 }, { perSource: 0, perClient: 0 }]) {
      auditClientAuthFailure(ctx, failure(counts), LIMITS);
    }
    await afterAnswerSettled();
    expect(record).not.toHaveBeenCalled();
  });

  it('never audits a client the tenant does not have: the first of a minute is logged at once, the rest as one count', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { ctx, record, warn } = fakeContext();
    for (let i = 0; i < 1000; i++) auditClientAuthFailure(ctx, failure({ clientId: `guess-${i}`, exists: false, reason: 'unknown_client', perSource: 1 }), LIMITS);
    auditClientAuthFailure(ctx, failure({ tenant: 'globex', clientId: 'other', exists: false, reason: 'unknown_client' }), LIMITS);
    await afterAnswerSettled();
    expect(record).not.toHaveBeenCalled();
    expect(warn).toHaveBeenCalledTimes(2);
    expect(warn.mock.calls[0]![0]).toMatchObject({ tenant: 'acme', client_id: 'guess-0', ip: '192.0.2.7', reason: 'unknown_client' });
    expect(warn.mock.calls[1]![0]).toMatchObject({ tenant: 'globex', client_id: 'other' });
    vi.advanceTimersByTime(60_000);
    expect(warn).toHaveBeenCalledTimes(3);
    expect(warn.mock.calls[2]![0]).toEqual({ tenant: 'acme', failures: 999, window_seconds: 60 });
    // A new minute starts with a line of its own again.
    auditClientAuthFailure(ctx, failure({ clientId: 'later', exists: false, reason: 'unknown_client' }), LIMITS);
    expect(warn).toHaveBeenCalledTimes(4);
    expect(warn.mock.calls[3]![0]).toMatchObject({ client_id: 'later' });
  });
});
