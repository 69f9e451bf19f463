/**
 * The multi-tenant benches' traffic feed (bench/tenant-fleet.ts FleetTraffic): the tenant of each
 * request, the addressing (header or subdomain), the check of an answer's iss and client_id (a
 * cross-tenant answer must be counted, not measured as a success), the 'cold' tag from the
 * client-side LRU mirror, and the failure breakdown.
 */
import { describe, expect, it } from 'vitest';
import { FleetTraffic, RecentTenants, checkTokenAnswer, tenantIssuer, type FleetTenant } from '../../bench/tenant-fleet.js';

const PORT = 4321;
const tenants: FleetTenant[] = [
  { slug: 't0', clientId: 'c0', authorization: 'Basic AAA' },
  { slug: 't1', clientId: 'c1', authorization: 'Basic BBB' },
];
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const answer = (claims: Record<string, unknown>) => JSON.stringify({ access_token: `${b64({ alg: 'RS256' })}.${b64(claims)}.sig`, token_type: 'Bearer' });

describe('fleet traffic', () => {
  it('accepts only a token of the tenant asked and its client', () => {
    const t0 = tenants[0]!;
    expect(checkTokenAnswer(answer({ iss: tenantIssuer('t0', PORT), client_id: 'c0' }), t0, PORT)).toBeUndefined();
    expect(checkTokenAnswer(answer({ iss: tenantIssuer('t1', PORT), client_id: 'c0' }), t0, PORT)).toMatch(/iss .*t1/);
    expect(checkTokenAnswer(answer({ iss: tenantIssuer('t0', PORT), client_id: 'c1' }), t0, PORT)).toMatch(/client_id c1/);
    expect(checkTokenAnswer('{"error":"x"}', t0, PORT)).toMatch(/no access_token/);
    expect(checkTokenAnswer('<html>', t0, PORT)).toMatch(/not JSON/);
  });

  it('names the tenant by header or, alternately, by subdomain, tags cold answers and counts wrong ones and failures', () => {
    const picks = [0, 1, 0, 1];
    const traffic = new FleetTraffic({ port: PORT, tenants, pick: () => picks.shift() ?? 0, recent: new RecentTenants(1), checkEvery: 1, addressing: 'alternate' });
    expect(traffic.spec()).toMatchObject({ method: 'POST', path: '/oidc/v1/token', okStatus: 200 });

    const c1: Record<string, unknown> = {};
    expect(traffic.next(c1).headers).toEqual({ 'x-tenant-id': 't0', authorization: 'Basic AAA' });
    expect(traffic.onResponse(200, answer({ iss: tenantIssuer('t0', PORT), client_id: 'c0' }), c1)).toBe('cold');

    const c2: Record<string, unknown> = {};
    expect(traffic.next(c2).headers).toEqual({ host: `t1.localhost:${PORT}`, authorization: 'Basic BBB' });
    // t1's answer carrying t0's issuer: a cross-tenant answer.
    traffic.onResponse(200, answer({ iss: tenantIssuer('t0', PORT), client_id: 'c1' }), c2);

    const c3: Record<string, unknown> = {};
    traffic.next(c3);
    traffic.onResponse(401, '{"error":"invalid_client"}', c3);

    expect(traffic.checked).toBe(2);
    expect(traffic.wrong).toBe(1);
    expect(traffic.wrongExamples[0]).toMatch(/tenant t1: iss/);
    expect(traffic.failuresByKind).toEqual({ '401 invalid_client': 1 });
    expect(traffic.touched()).toBe(2);

    traffic.reset();
    expect([traffic.checked, traffic.wrong, traffic.touched()]).toEqual([0, 0, 0]);
    expect(traffic.failuresByKind).toEqual({});
  });

  it('tags an answer cold only when its tenant was outside the recent set', () => {
    const traffic = new FleetTraffic({ port: PORT, tenants, pick: () => 0, recent: new RecentTenants(1), checkEvery: 10, addressing: 'header' });
    const ok = answer({ iss: tenantIssuer('t0', PORT), client_id: 'c0' });
    const first: Record<string, unknown> = {};
    traffic.next(first);
    const second: Record<string, unknown> = {};
    traffic.next(second);
    expect(traffic.onResponse(200, ok, first)).toBe('cold');
    expect(traffic.onResponse(200, ok, second)).toBeUndefined();
    expect(traffic.checked).toBe(0);
  });
});
