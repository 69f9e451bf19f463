/**
 * Hostile input, part 6: rate limits. The scope and rate class of every operation (allOperations)
 * are compared with a table written from spec section 4; then, with every class limited to 3
 * requests per window, every operation answers with RateLimit-* headers, its 4th call is 429 with
 * Retry-After, and the class it shares its budget with is the one the spec names.
 */
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { expectProblem } from '../../helpers/problem.js';
import {
  SPEC_ENDPOINTS, allOperations, label, newCaller, seedFixture, send, shape, specOf, validRequest,
  type Fixture, type Operation, type SpecEndpoint,
} from '../../helpers/hostile.js';
import type { RateClass } from '../../../src/management/rate-limit.js';

const LIMIT = 3;
// One window for the whole file (windows are aligned to multiples of their length since 1970).
const WINDOW = 365 * 24 * 3600;
let t: TestApp;
let fx: Fixture;

const ops = allOperations.map((o) => [label(o), o] as [string, Operation]);
const CLASSES: RateClass[] = ['read', 'write', 'delete', 'sensitive'];

/** Harmless requests of each spec class (unknown ids answer 404 after the limiter has counted them). */
const PROBES: Record<RateClass, Array<{ method: SpecEndpoint['method']; path: string; body?: unknown }>> = {
  read: [{ method: 'GET', path: '/api/v1/audit/types' }, { method: 'GET', path: '/api/v1/jwks' }],
  write: [{ method: 'PATCH', path: '/api/v1/clients/hostile-unknown', body: { description: 'probe' } }, { method: 'POST', path: '/api/v1/users/hostile-unknown/lock' }],
  delete: [{ method: 'DELETE', path: '/api/v1/registration-tokens/hostile-unknown' }, { method: 'DELETE', path: '/api/v1/clients/hostile-unknown' }],
  sensitive: [{ method: 'POST', path: '/api/v1/clients/hostile-unknown/secret' }, { method: 'POST', path: '/api/v1/users/hostile-unknown/mfa/reset' }],
};
const specRowOf = (p: { method: string; path: string }) => SPEC_ENDPOINTS.find((s) => shape(s.method, s.path) === shape(p.method, p.path.replace(/hostile-unknown/, ':id')));
const probeFor = (cls: RateClass, not: Operation) => PROBES[cls].find((p) => shape(p.method, p.path.replace(/hostile-unknown/, ':id')) !== shape(not.method, not.path))!;

beforeAll(async () => {
  t = await startTestApp({
    SECURITY_RATE_LIMIT_READ: String(LIMIT),
    SECURITY_RATE_LIMIT_WRITE: String(LIMIT),
    SECURITY_RATE_LIMIT_DELETE: String(LIMIT),
    SECURITY_RATE_LIMIT_SENSITIVE: String(LIMIT),
    SECURITY_RATE_LIMIT_WINDOW_SECONDS: String(WINDOW),
  });
  // Seeding with a fresh caller per call keeps every budget of the test callers untouched.
  fx = await seedFixture(t, async () => (await newCaller(t)).token);
});
afterAll(async () => t?.close());

describe('scopes and rate classes against spec section 4', () => {
  it('every operation is in the spec table and every spec endpoint is an operation', () => {
    expect(allOperations.filter((o) => !specOf(o)).map(label), 'operations the spec does not list').toEqual([]);
    const missing = SPEC_ENDPOINTS.filter((s) => !allOperations.some((o) => shape(o.method, o.path) === shape(s.method, s.path)));
    expect(missing.map((s) => `${s.method} ${s.path}`), 'spec endpoints without an operation').toEqual([]);
  });

  it('the probes of each class are of that class in the spec', () => {
    for (const cls of CLASSES) for (const p of PROBES[cls]) expect(specRowOf(p)?.rateClass, `${p.method} ${p.path}`).toBe(cls);
  });

  it.each(ops)('%s has the spec scope and rate class', (_name, o) => {
    const spec = specOf(o)!;
    expect(spec, 'listed in SPEC_ENDPOINTS').toBeDefined();
    expect(o.rateClass, 'rate class').toBe(spec.rateClass);
    expect(o.scope, 'scope').toBe(spec.scope);
  });
});

function limits(res: { headers: Headers }) {
  const h = (n: string) => res.headers.get(n);
  return { limit: h('ratelimit-limit'), remaining: h('ratelimit-remaining'), reset: h('ratelimit-reset') };
}

function expectLimitHeaders(res: { headers: Headers; status: number; text: string }, remaining: number, what: string) {
  const l = limits(res);
  expect(l, `${what}: ${res.status} ${res.text}`).toMatchObject({ limit: String(LIMIT), remaining: String(remaining) });
  expect(l.reset, what).toMatch(/^\d+$/);
  expect(Number(l.reset), what).toBeGreaterThanOrEqual(1);
  expect(Number(l.reset), what).toBeLessThanOrEqual(WINDOW);
}

describe.each(ops)('%s', (_name, o) => {
  it(`answers with RateLimit headers; the ${LIMIT + 1}th call in its spec class is 429 with Retry-After`, async () => {
    const cls = specOf(o)!.rateClass;
    const { token } = await newCaller(t);
    for (let i = 1; i <= LIMIT; i++) {
      const { path, body } = validRequest(o, fx);
      const res = await send(t, o, path, { token, body });
      expect(res.status, `call ${i}: ${res.text}`).not.toBe(429);
      expect(res.status, `call ${i}: ${res.text}`).toBeLessThan(500);
      expectLimitHeaders(res, LIMIT - i, `call ${i}`);
    }
    const { path, body } = validRequest(o, fx);
    const refused = await send(t, o, path, { token, body });
    const problem = expectProblem(refused, 429, 'rate-limited', path);
    expect(problem.title).toBe('Too Many Requests');
    expectLimitHeaders(refused, 0, `call ${LIMIT + 1}`);
    expect(refused.headers.get('retry-after')).toBe(limits(refused).reset);

    // The budget it used up is the spec class's: another operation of that class is refused too,
    // while each other class still has its whole budget.
    const same = probeFor(cls, o);
    const sameRes = await send(t, same, same.path, { token, body: same.body });
    expect(sameRes.status, `${same.method} ${same.path} shares the ${cls} budget: ${sameRes.text}`).toBe(429);
    for (const other of CLASSES.filter((c) => c !== cls)) {
      const probe = PROBES[other][0]!;
      const res = await send(t, probe, probe.path, { token, body: probe.body });
      expect(res.status, `${other} class (${probe.method} ${probe.path}) after using up ${cls}: ${res.text}`).not.toBe(429);
      expectLimitHeaders(res, LIMIT - 1, `${other} class probe`);
    }
  });
});
