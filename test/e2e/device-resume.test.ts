/**
 * The device flow's resume address opened without the browser's interaction (another browser, a
 * bookmark, an expired flow) is the expired-interaction page, 400 with the pages' headers: it was a
 * bare 500 text/plain (oidc-provider saving a session it had never stored hid the refusal).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('device flow resume without its interaction', () => {
  it.each(['/oidc/v1/device/abc', '/oidc/v1/device/confirm', '/oidc/v1/device/0123456789abcdefghijk'])('GET %s is the 400 page, never a 500', async (path) => {
    const res = await fetch(`${t.url}${path}`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await res.text()).toContain('<html lang="en"');
  });
});

describe('the device page stores no lasting session for a visitor who has not signed in', () => {
  it('an anonymous GET keeps its form secret in a session of an hour, not the session lifetime', async () => {
    const before = new Set((await t.app.ctx.storage.oidc.listSessions('default', {})).map((r) => r.id));
    const res = await fetch(`${t.url}/oidc/v1/device`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    const made = (await t.app.ctx.storage.oidc.listSessions('default', {})).filter((r) => !before.has(r.id));
    expect(made).toHaveLength(1);
    const expiresAt = made[0]!.expires_at ?? Number.POSITIVE_INFINITY;
    expect(made[0]!.payload.accountId).toBeUndefined();
    expect(expiresAt).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600 + 5);
  });
});
