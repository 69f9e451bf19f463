/**
 * Issue 12 item 9: during a PostgreSQL outage (sessions and tokens in Redis) an RP-initiated logout
 * succeeded while its audit entry was dropped, and a refresh grant answered 500 server_error.
 * Now the logout is refused (503) with the session intact, and the refresh grant is 503
 * temporarily_unavailable.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, codeFlow, parseForm } from '../../bench/flows.js';
import type { TestApp } from '../helpers/app.js';
import type { PrivatePostgres } from '../helpers/postgres.js';
import { appOnPrivatePostgres, type AppOnPrivatePostgres } from '../helpers/private-postgres-app.js';
import { createClient, createUser } from '../helpers/users.js';

let server: PrivatePostgres;
let t: TestApp;
let rp: { client_id: string; client_secret: string; redirect_uri: string };
let session: BrowserSession;
let tokens: Record<string, unknown>;
const REDIRECT = 'https://rp.example/cb';
const BYE = 'https://rp.example/bye';

const basic = () => `Basic ${Buffer.from(`${encodeURIComponent(rp.client_id)}:${encodeURIComponent(rp.client_secret)}`).toString('base64')}`;
const refresh = async () => {
  const res = await fetch(`${t.issuer}/token`, {
    method: 'POST',
    headers: { authorization: basic(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token) }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, string> };
};
/** The end-session page, then its confirmation form posted with logout=yes. */
const logout = async () => {
  const q = new URLSearchParams({ id_token_hint: String(tokens.id_token), post_logout_redirect_uri: BYE, state: 's' });
  const page = await session.request(`${t.issuer}/session/end?${q}`);
  expect(page.status, page.html).toBe(200);
  const f = parseForm(page.html ?? '');
  if (!f) throw new Error('no logout form');
  return session.request(new URL(f.action, page.url).toString(), { method: 'POST', body: new URLSearchParams({ ...f.fields, logout: 'yes' }).toString() });
};
const promptNone = async () => {
  const q = new URLSearchParams({ client_id: rp.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', prompt: 'none', state: 'x', code_challenge: randomBytes(32).toString('base64url'), code_challenge_method: 'S256' });
  const out = await session.follow(`${t.issuer}/auth?${q}`, REDIRECT);
  if (!('callback' in out)) throw new Error(`no callback: ${out.page.status}`);
  return out.callback;
};
const logoutAudits = async () => (await t.sql("SELECT id FROM audit_entries WHERE type = 'logout'")).length;

let running: AppOnPrivatePostgres | undefined;

beforeAll(async () => {
  running = await appOnPrivatePostgres();
  ({ server, t } = running);
  const c = await createClient(t, { client_name: 'rp', redirect_uris: [REDIRECT], post_logout_redirect_uris: [BYE], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: 'openid offline_access', first_party: true });
  rp = { client_id: c.client_id, client_secret: c.client_secret, redirect_uri: REDIRECT };
  const user = await createUser(t);
  session = new BrowserSession(t.url);
  tokens = await codeFlow(session, rp, { login: user.email, password: user.password }, { scope: 'openid offline_access', params: { prompt: 'consent' } });
  expect(typeof tokens.refresh_token).toBe('string');
});

afterAll(async () => {
  await running?.close();
});

describe('PostgreSQL down, Redis up', () => {
  beforeAll(async () => {
    expect(t.redis).toBe(true);
    await server.stop('immediate');
  });

  it('a refresh grant answers 503 temporarily_unavailable, not 500', async () => {
    const res = await refresh();
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.error).toBe('temporarily_unavailable');
    expect(res.retryAfter).toBe('1');
  });

  it('an RP-initiated logout is refused instead of succeeding unaudited', async () => {
    const res = await logout();
    expect(res.status).toBe(503);
    expect(res.location ?? '').not.toContain(BYE);
  });
});

describe('PostgreSQL back', () => {
  beforeAll(async () => {
    await server.start();
    for (let i = 0; i < 100 && (await fetch(`${t.url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
  });

  it('the session survived the refused logout; a logout now succeeds and is audited', async () => {
    expect(await logoutAudits()).toBe(0);
    expect((await promptNone()).get('code')).toEqual(expect.any(String));
    const res = await logout();
    expect(res.location).toContain(BYE);
    expect(await logoutAudits()).toBe(1);
    expect((await promptNone()).get('error')).toBe('login_required');
  });
});
