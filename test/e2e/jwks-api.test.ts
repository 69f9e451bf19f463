/**
 * Signing keys API (spec 4.6) against the real server: every endpoint and error status, tokens
 * across a rotation verified with jose against the served JWKS, the jwks:rotated event, and
 * retirement after a short overlap window.
 */
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotationChannel } from '../../src/events/bus.js';
import { until } from '../helpers/until.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { onChannel } from '../helpers/bus.js';

const RESOURCE = 'urn:svc:api:v1';
const KEY_FIELDS = ['alg', 'createdAt', 'kid', 'promoted', 'publicKey', 'rotatedAt', 'status', 'use'];
const ALGS = ['ES256', 'EdDSA', 'RS256']; // sorted order

interface Key {
  kid: string;
  alg: string;
  use: string;
  status: string;
  promoted: boolean;
  publicKey: Record<string, string>;
  createdAt: string;
  rotatedAt: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const publishedKids = async (t: TestApp) => {
  const res = await fetch(`${t.url}/oidc/v1/jwks`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid).sort();
};
/** A fresh remote key set each time: jose caches, and the point is what the server serves now. */
const verifyAgainstServedJwks = (t: TestApp, token: string) =>
  jwtVerify(token, createRemoteJWKSet(new URL(`${t.url}/oidc/v1/jwks`)), { issuer: t.issuer, audience: RESOURCE, typ: 'at+jwt' });

async function listKeys(t: TestApp, token: string, status?: string): Promise<Key[]> {
  const res = await api(t, 'GET', `/api/v1/jwks${status ? `?status=${status}` : ''}`, { token });
  expect(res.status).toBe(200);
  return res.json.data as Key[];
}

describe('signing keys API', () => {
  let t: TestApp;
  let read: string;
  let admin: string;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_RATE_LIMIT_SENSITIVE: '1000' });
    read = await t.token('svc:jwks:read');
    admin = await t.token(['svc:jwks:read', 'svc:jwks:rotate', 'svc:audit:read']);
  });
  afterAll(async () => t?.close());

  it('lists the keys as a flat array of spec 2.5 key objects with public material only', async () => {
    const res = await api(t, 'GET', '/api/v1/jwks', { token: read });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(['data']);
    const keys = res.json.data as Key[];
    expect(keys.map((k) => k.alg).sort()).toEqual(ALGS);
    for (const k of keys) {
      expect(Object.keys(k).sort()).toEqual(KEY_FIELDS);
      expect(k).toMatchObject({ use: 'sig', status: 'active', promoted: true, rotatedAt: null });
      expect(new Date(k.createdAt).toISOString()).toBe(k.createdAt);
      expect(k.publicKey.kid).toBe(k.kid);
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(k.publicKey).not.toHaveProperty(secret);
    }
    const rsa = keys.find((k) => k.alg === 'RS256')!;
    expect(rsa.publicKey).toMatchObject({ kty: 'RSA', e: 'AQAB' });
    expect(rsa.publicKey.n).toMatch(/^[A-Za-z0-9_-]{300,}$/);
  });

  it('gets one key, answers 404 for an unknown kid, filters by status and rejects an unknown status', async () => {
    const [first] = await listKeys(t, read);
    const one = await api(t, 'GET', `/api/v1/jwks/${first!.kid}`, { token: read });
    expect(one.status).toBe(200);
    expect(one.json.data).toEqual(first);

    const missing = await api(t, 'GET', '/api/v1/jwks/no-such-kid', { token: read });
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ type: 'urn:svc:error:not-found', status: 404, instance: '/api/v1/jwks/no-such-kid' });

    expect(await listKeys(t, read, 'retired')).toEqual([]);
    const bad = await api(t, 'GET', '/api/v1/jwks?status=bogus', { token: read });
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0].field).toBe('status');
  });

  it('requires svc:jwks:rotate for changes and svc:jwks:read for reads', async () => {
    for (const [method, path] of [['POST', '/api/v1/jwks/rotate'], ['POST', '/api/v1/jwks/retire-expired'], ['DELETE', '/api/v1/jwks/x']] as const) {
      const res = await api(t, method, path, { token: read });
      expect(res.status).toBe(403);
      expect(res.headers.get('www-authenticate')).toContain('scope="svc:jwks:rotate"');
    }
    const noRead = await t.token('svc:audit:read');
    expect((await api(t, 'GET', '/api/v1/jwks', { token: noRead })).status).toBe(403);
    expect((await api(t, 'GET', '/api/v1/jwks')).status).toBe(401);
  });

  it('routes /jwks/rotate and /jwks/retire-expired apart from /jwks/:kid', async () => {
    // The action paths answer POST only (405, Allow: POST): never a lookup or retirement of a key by that name.
    for (const [method, path] of [['GET', '/api/v1/jwks/rotate'], ['GET', '/api/v1/jwks/retire-expired'], ['PUT', '/api/v1/jwks/rotate'], ['DELETE', '/api/v1/jwks/rotate'], ['DELETE', '/api/v1/jwks/retire-expired']] as const) {
      const res = await api(t, method, path, { token: admin });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
    expect((await listKeys(t, read, 'expiring')).length).toBe(0);
  });

  it('rotates: old tokens keep verifying against the served JWKS, which changes at once; new tokens carry the new kid; the event is published', async () => {
    const before = await listKeys(t, read);
    const oldToken = await t.token('svc:jwks:read');
    const oldKid = decodeProtectedHeader(oldToken).kid!;
    expect(before.find((k) => k.kid === oldKid)?.alg).toBe('RS256');
    const jwksBefore = await publishedKids(t);
    expect(jwksBefore).toEqual(before.map((k) => k.kid).sort());
    await verifyAgainstServedJwks(t, oldToken);

    const events: unknown[] = [];
    // The app's own channel (its Redis key prefix in the postgresql run); the actor subscribed to it already.
    const off = onChannel(t.app.ctx.events, rotationChannel('default', t.app.ctx.config.redis.key_prefix), (p) => events.push(p));
    const started = Date.now();
    const res = await api(t, 'POST', '/api/v1/jwks/rotate', { token: admin });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: { message: expect.any(String), promoted: 3 } });

    // No restart, no waiting: the very next JWKS fetch has the new keys next to the old ones.
    const active = await listKeys(t, read, 'active');
    const expiring = await listKeys(t, read, 'expiring');
    expect(active.map((k) => k.alg).sort()).toEqual(ALGS);
    expect(expiring.map((k) => k.kid).sort()).toEqual(jwksBefore);
    for (const k of expiring) expect(k).toMatchObject({ promoted: false, rotatedAt: expect.any(String) });
    const jwksAfter = await publishedKids(t);
    expect(jwksAfter).toEqual([...jwksBefore, ...active.map((k) => k.kid)].sort());

    // The token issued before the rotation is still good, for jose and for the API itself.
    const { payload } = await verifyAgainstServedJwks(t, oldToken);
    expect(payload.client_id).toBe('bootstrap-admin');
    expect((await api(t, 'GET', '/api/v1/jwks', { token: oldToken })).status).toBe(200);

    const newToken = await t.token('svc:jwks:read');
    const newKid = decodeProtectedHeader(newToken).kid;
    expect(newKid).not.toBe(oldKid);
    expect(newKid).toBe(active.find((k) => k.alg === 'RS256')!.kid);
    await verifyAgainstServedJwks(t, newToken);

    // Delivered on a later turn (in-process) or through Redis pub/sub: wait for it, then for no second one.
    for (let i = 0; i < 40 && !events.length; i++) await sleep(25);
    await sleep(50);
    off();
    expect(events).toHaveLength(1);
    const event = events[0] as Record<string, unknown>;
    expect(Object.keys(event).sort()).toEqual(['at', 'kids', 'promoted', 'tenant']);
    expect(event).toEqual({ tenant: 'default', kids: expect.any(Array), promoted: 3, at: expect.any(String) });
    expect((event.kids as string[]).slice().sort()).toEqual(active.map((k) => k.kid).sort());
    expect(Date.parse(event.at as string)).toBeGreaterThanOrEqual(started - 1000);

    const audit = await api(t, 'GET', '/api/v1/audit?type=jwks.rotated', { token: admin });
    expect(audit.json.data[0]).toMatchObject({ type: 'jwks.rotated', status: 'success', client_id: 'bootstrap-admin' });
    expect(audit.json.data[0].details).toMatchObject({ promoted: 3, trigger: 'api' });
  });

  it('retire-expired leaves keys inside their overlap window alone', async () => {
    const res = await api(t, 'POST', '/api/v1/jwks/retire-expired', { token: admin });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: { message: expect.any(String), retired: 0 } });
    expect((await listKeys(t, read, 'expiring')).length).toBe(3);
  });

  it('DELETE marks a key (202), keeps it published until retire-expired, then 409; unknown kid 404', async () => {
    // Not the key that signed the tokens used below: once retired, they would stop verifying.
    const inUse = new Set([decodeProtectedHeader(read).kid, decodeProtectedHeader(admin).kid]);
    const victim = (await listKeys(t, read, 'expiring')).find((k) => !inUse.has(k.kid));
    const res = await api(t, 'DELETE', `/api/v1/jwks/${victim!.kid}`, { token: admin });
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ data: { message: expect.any(String), kid: victim!.kid, current_status: 'expiring' } });
    expect(await publishedKids(t)).toContain(victim!.kid);
    // Repeating is accepted too: still not retired.
    expect((await api(t, 'DELETE', `/api/v1/jwks/${victim!.kid}`, { token: admin })).status).toBe(202);

    const retire = await api(t, 'POST', '/api/v1/jwks/retire-expired', { token: admin });
    expect(retire.json.data.retired).toBe(1);
    expect(await publishedKids(t)).not.toContain(victim!.kid);
    expect((await api(t, 'GET', `/api/v1/jwks/${victim!.kid}`, { token: read })).json.data.status).toBe('retired');

    const again = await api(t, 'DELETE', `/api/v1/jwks/${victim!.kid}`, { token: admin });
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ type: 'urn:svc:error:conflict', status: 409 });
    const unknown = await api(t, 'DELETE', '/api/v1/jwks/no-such-kid', { token: admin });
    expect(unknown.status).toBe(404);

    const types = (await api(t, 'GET', '/api/v1/audit/types', { token: admin })).json.data as string[];
    expect(types).toEqual(expect.arrayContaining(['jwks.rotated', 'jwks.retired', 'jwks.retire_requested']));
  });
});

describe('signing keys with a one-second overlap window', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS: '1', SECURITY_KEY_STORE_ALGORITHMS: 'ES256,RS256' });
  });
  afterAll(async () => t?.close());

  it('retires the rotated-out keys when the window ends, unasked: they leave the JWKS and their tokens stop working', async () => {
    const admin = await t.token(['svc:jwks:read', 'svc:jwks:rotate']);
    const oldToken = await t.token('svc:jwks:read');
    const oldKids = await publishedKids(t);
    expect(oldKids).toHaveLength(2);

    expect((await api(t, 'POST', '/api/v1/jwks/rotate', { token: admin })).json.data.promoted).toBe(2);
    expect(await publishedKids(t)).toHaveLength(4);
    await verifyAgainstServedJwks(t, oldToken);

    // No retire-expired call: a rotation brings the key check forward to its window's end (+1 s
    // of grace), where it would otherwise come at the next hourly check.
    await until(async () => (await publishedKids(t)).length === 2, 8000);
    const served = await publishedKids(t);
    for (const kid of oldKids) expect(served).not.toContain(kid);
    await expect(verifyAgainstServedJwks(t, oldToken)).rejects.toThrow();
    const rejected = await api(t, 'GET', '/api/v1/jwks', { token: oldToken });
    expect(rejected.status).toBe(401);
    const freshAdmin = await t.token(['svc:jwks:read', 'svc:jwks:rotate']);
    const retired = (await api(t, 'GET', '/api/v1/jwks?status=retired', { token: freshAdmin })).json.data as Key[];
    expect(retired.map((k) => k.kid).sort()).toEqual(oldKids);
    // Nothing is left for retire-expired to do.
    const res = await api(t, 'POST', '/api/v1/jwks/retire-expired', { token: freshAdmin });
    expect(res.status).toBe(200);
    expect(res.json.data.retired).toBe(0);
  });
});
