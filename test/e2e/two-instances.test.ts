/**
 * Two instances of the service (src/main.ts in two processes of their own, nothing shared in
 * memory) on one PostgreSQL database and one Redis behave as one service (ARCHITECTURE.md
 * "Scale beyond one machine"): both advertise the same issuer (BASE_URL names instance 1, as a load
 * balancer's address would), started at the same moment on an empty database.
 *
 * - a key rotation through instance 1 is served by instance 2's JWKS within 1 s (jwks:rotated);
 * - a session signed in through instance 1 and revoked through its Management API is refused by
 *   instance 2 (refresh token -> invalid_grant, prompt=none -> login_required);
 * - a user renamed through instance 1 reaches instance 2's userinfo, which holds users in memory,
 *   once the database's change notice arrives (storage/postgresql/user-cache.ts);
 * - Management API rate limits are one count across both;
 * - a client created on one is usable on the other at once; a secret regenerated or a client
 *   deactivated on one is refused by the other at once, although actors cache clients for 30 s
 *   (client:changed);
 * - one logout confirmation sent to both at once signs out once (oidc/end-session-once.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, TEST_REDIS_URL, dropRedisKeys, freePort } from '../helpers/app.js';
import { startInstance, type Instance } from '../helpers/instance.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const RESOURCE = 'urn:svc:api:v1';
const RATE_LIMIT_READ = 3;

interface Creds {
  id: string;
  secret: string;
}
const basic = (c: Creds) => `Basic ${Buffer.from(`${encodeURIComponent(c.id)}:${encodeURIComponent(c.secret)}`).toString('base64')}`;
const bootstrap: Creds = { id: BOOTSTRAP_ID, secret: BOOTSTRAP_SECRET };

let db: TestDatabase;
let prefix: string;
let one: Instance;
let two: Instance;
/** The Management token of the bootstrap client, from instance 1. */
let admin: string;

async function call(i: Instance, method: string, path: string, opts: { token?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${i.url}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? (JSON.parse(text) as any) : undefined };
}

async function form(i: Instance, path: string, fields: Record<string, string>, creds?: Creds) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (creds) headers.authorization = basic(creds);
  const res = await fetch(`${i.url}/oidc/v1${path}`, { method: 'POST', headers, body: new URLSearchParams(fields) });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as any) : undefined };
}

const clientCredentials = (i: Instance, c: Creds, scope = 'svc:clients:read') => form(i, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope }, c);

async function jwksKids(i: Instance): Promise<string[]> {
  const res = await fetch(`${i.url}/oidc/v1/jwks`);
  return ((await res.json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid).sort();
}

async function createClient(body: Record<string, unknown>): Promise<{ client_id: string; client_secret: string }> {
  const res = await call(one, 'POST', '/api/v1/clients', { token: admin, body });
  if (res.status !== 201) throw new Error(`client creation failed: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.data;
}

beforeAll(async () => {
  db = await migratedDatabase();
  prefix = `svctest-two-${process.pid}-${randomBytes(4).toString('hex')}`;
  const [port1, port2] = [await freePort(), await freePort()];
  const env = {
    NODE_ENV: 'test',
    // One public address for both, as behind a load balancer: tokens and sessions are the issuer's.
    BASE_URL: `http://localhost:${port1}`,
    STORAGE_ADAPTER: 'postgresql',
    STORAGE_POSTGRESQL_URL: db.url,
    STORAGE_POSTGRESQL_POOL_MAX: '5',
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
    SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
    SECURITY_RATE_LIMIT_READ: String(RATE_LIMIT_READ),
    // One window for the whole file, so the shared count cannot reset half-way.
    SECURITY_RATE_LIMIT_WINDOW_SECONDS: '3600',
    SECURITY_LOGGING_LEVEL: 'warn',
    SECURITY_LOGGING_PRETTY_PRINT: 'false',
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
    WORKERS_ARGON2_THREADS: '1',
  };
  // Both at once on an empty database: key generation and the bootstrap client race.
  [one, two] = await Promise.all([startInstance('1', port1, env), startInstance('2', port2, env)]);
  const res = await clientCredentials(one, bootstrap, 'svc:clients:read svc:clients:write svc:clients:delete svc:jwks:rotate svc:users:write svc:sessions:read svc:sessions:revoke');
  if (res.status !== 200) throw new Error(`bootstrap token: ${res.status} ${JSON.stringify(res.json)}`);
  admin = res.json.access_token;
}, 90_000);

afterAll(async () => {
  await Promise.all([one?.stop(), two?.stop()]);
  await db?.drop();
  if (prefix) await dropRedisKeys(TEST_REDIS_URL, prefix);
});

describe('two instances on one PostgreSQL and one Redis', () => {
  it('started together on an empty database, they agree on one key set and one bootstrap client', async () => {
    const [a, b] = await Promise.all([jwksKids(one), jwksKids(two)]);
    expect(a).toEqual(b);
    // One active key per configured algorithm, not one set per instance.
    expect(a).toHaveLength(3);
    const admin1 = await db.admin();
    try {
      expect((await admin1.query("SELECT count(*)::int AS n FROM clients WHERE tenant_id = 'default'")).rows[0].n).toBe(1);
    } finally {
      await admin1.end();
    }
  });

  it('a token issued by one verifies on the other', async () => {
    const res = await call(two, 'GET', `/api/v1/clients/${BOOTSTRAP_ID}`, { token: admin });
    expect(res.status).toBe(200);
    // The instance-1 token also introspects as active on instance 2.
    const intro = await form(two, '/token/introspection', { token: admin }, bootstrap);
    expect(intro.json).toMatchObject({ active: true, client_id: BOOTSTRAP_ID });
  });

  it("a key rotation through instance 1 is in instance 2's JWKS within 1 s", async () => {
    const before = await jwksKids(two);
    const res = await call(one, 'POST', '/api/v1/jwks/rotate', { token: admin });
    expect(res.status).toBe(200);
    // The rotation is committed and announced (jwks:rotated) before instance 1 answers: the
    // clock starts there (generating the keys before it is not the propagation).
    const started = Date.now();
    const expected = await jwksKids(one);
    expect(expected.length).toBe(before.length + 3);
    let seen: string[] = before;
    while (Date.now() - started < 3000) {
      seen = await jwksKids(two);
      if (seen.join() === expected.join()) break;
      await sleep(10);
    }
    const ms = Date.now() - started;
    expect(seen).toEqual(expected);
    expect(ms).toBeLessThan(1000);
    // Tokens signed by instance 2 with the new keys verify on instance 1.
    const token = await clientCredentials(two, bootstrap);
    expect(token.status).toBe(200);
    const kid = JSON.parse(Buffer.from(token.json.access_token.split('.')[0], 'base64url').toString()).kid as string;
    expect(expected.filter((k) => !before.includes(k))).toContain(kid);
    expect((await call(one, 'GET', `/api/v1/clients/${BOOTSTRAP_ID}`, { token: token.json.access_token })).status).toBe(200);
  });

  it('a client created on instance 1 is usable on instance 2 at once', async () => {
    const c = await createClient({ client_name: 'Created on 1', grant_types: ['client_credentials'], scope: 'svc:clients:read' });
    const token = await clientCredentials(two, { id: c.client_id, secret: c.client_secret });
    expect(token.status).toBe(200);
    expect(token.json.token_type).toBe('Bearer');
  });

  it('a secret regenerated on instance 1 is refused by instance 2 at once, and so are its earlier tokens', async () => {
    const c = await createClient({ client_name: 'Secret rotated on 1', grant_types: ['client_credentials'], scope: 'svc:clients:read' });
    const old = { id: c.client_id, secret: c.client_secret };
    // Instance 2 now caches the client (30 s) and holds a token of it.
    const first = await clientCredentials(two, old);
    expect(first.status).toBe(200);

    const regenerated = await call(one, 'POST', `/api/v1/clients/${c.client_id}/secret`, { token: admin });
    expect(regenerated.status).toBe(200);
    const fresh = { id: c.client_id, secret: regenerated.json.data.client_secret as string };

    const refused = await clientCredentials(two, old);
    expect(refused.status).toBe(401);
    expect(refused.json.error).toBe('invalid_client');
    expect((await clientCredentials(two, fresh)).status).toBe(200);
    // The token issued with the old secret no longer introspects as active on instance 2.
    expect((await form(two, '/token/introspection', { token: first.json.access_token }, bootstrap)).json).toEqual({ active: false });
  });

  it('a client deactivated on instance 1 is refused by instance 2 as soon as the change event arrives', async () => {
    const c = await createClient({ client_name: 'Deactivated on 1', grant_types: ['client_credentials'], scope: 'svc:clients:read' });
    const creds = { id: c.client_id, secret: c.client_secret };
    expect((await clientCredentials(two, creds)).status).toBe(200);
    expect((await call(one, 'POST', `/api/v1/clients/${c.client_id}/deactivate`, { token: admin })).status).toBe(200);
    // Instance 2 hears of the change by Redis pub/sub, which races the next request by a few
    // milliseconds under load; well inside a second, never the client cache's 30 s.
    const deadline = Date.now() + 1000;
    let refused = await clientCredentials(two, creds);
    while (refused.status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      refused = await clientCredentials(two, creds);
    }
    expect(refused.status).toBe(401);
    expect(refused.json.error).toBe('invalid_client');
  });

  it('a session signed in through instance 1 and revoked through its API is refused by instance 2', async () => {
    const redirectUri = 'http://127.0.0.1:9/callback';
    const web = await createClient({
      client_name: 'Web app',
      application_type: 'web',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid offline_access',
    });
    const rp = { id: web.client_id, secret: web.client_secret };
    const password = 'Correct-Horse-Battery-Two';
    const email = `two-${randomBytes(3).toString('hex')}@example.com`;
    const user = await call(one, 'POST', '/api/v1/users', { token: admin, body: { email, password, email_verified: true, name: 'Two Instances' } });
    expect(user.status).toBe(201);

    const browser = new CookieBrowser();
    const verifier = randomBytes(32).toString('base64url');
    const authParams = {
      client_id: rp.id,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid offline_access',
      prompt: 'consent',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: randomBytes(8).toString('hex'),
      nonce: randomBytes(8).toString('hex'),
    };
    // Sign-in pages through instance 1 (the issuer's address); the code is redeemed on instance 2.
    const callback = await browser.authorize(one, `/oidc/v1/auth?${new URLSearchParams(authParams)}`, redirectUri, { email, password });
    expect(callback.searchParams.get('state')).toBe(authParams.state);
    const code = callback.searchParams.get('code');
    expect(code).toBeTruthy();

    const tokens = await form(two, '/token', { grant_type: 'authorization_code', code: code!, redirect_uri: redirectUri, code_verifier: verifier }, rp);
    expect(tokens.status, JSON.stringify(tokens.json)).toBe(200);
    expect(tokens.json.refresh_token).toEqual(expect.any(String));
    // Refresh works on either instance while the session lives (and rotates the refresh token).
    const refreshed = await form(two, '/token', { grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token }, rp);
    expect(refreshed.status).toBe(200);
    const refreshToken = refreshed.json.refresh_token as string;
    // Silent re-authentication on instance 2 works with the session cookie instance 1 set.
    const silent = await browser.authorize(two, `/oidc/v1/auth?${new URLSearchParams({ ...authParams, prompt: 'none', scope: 'openid' })}`, redirectUri);
    expect(silent.searchParams.get('code')).toBeTruthy();

    const sessions = await call(two, 'GET', `/api/v1/sessions?client_id=${encodeURIComponent(rp.id)}`, { token: admin });
    expect(sessions.status).toBe(200);
    expect(sessions.json.data).toHaveLength(1);
    const revoked = await call(one, 'DELETE', `/api/v1/sessions/${encodeURIComponent(sessions.json.data[0].jti)}`, { token: admin });
    expect(revoked.status).toBe(204);

    const refused = await form(two, '/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, rp);
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe('invalid_grant');
    const loggedOut = await browser.authorize(two, `/oidc/v1/auth?${new URLSearchParams({ ...authParams, prompt: 'none', scope: 'openid' })}`, redirectUri);
    expect(loggedOut.searchParams.get('error')).toBe('login_required');
  });

  it('one logout confirmation sent to both instances at once signs out once: one audit entry, one logout token', async () => {
    const received: string[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(new URLSearchParams(body).get('logout_token') ?? '');
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const redirectUri = 'http://127.0.0.1:9/logout-callback';
      const web = await createClient({
        client_name: 'Logout app',
        application_type: 'web',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        scope: 'openid',
        first_party: true,
        backchannel_logout_uri: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/bcl`,
      });
      const rp = { id: web.client_id, secret: web.client_secret };
      const password = 'Correct-Horse-Battery-Out';
      const email = `out-${randomBytes(3).toString('hex')}@example.com`;
      const user = await call(one, 'POST', '/api/v1/users', { token: admin, body: { email, password, email_verified: true } });
      expect(user.status).toBe(201);
      const browser = new CookieBrowser();
      const verifier = randomBytes(32).toString('base64url');
      const callback = await browser.authorize(
        one,
        `/oidc/v1/auth?${new URLSearchParams({ client_id: rp.id, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' })}`,
        redirectUri,
        { email, password },
      );
      const tokens = await form(two, '/token', { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier }, rp);
      expect(tokens.status).toBe(200);

      const page = await browser.page(one, `/oidc/v1/session/end?id_token_hint=${tokens.json.id_token}`);
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)?.[1];
      expect(xsrf, page.slice(0, 300)).toBeTruthy();
      // The same confirmation, three copies through each instance at the same moment.
      const confirm = (i: Instance) =>
        fetch(`${i.url}/oidc/v1/session/end/confirm`, { method: 'POST', redirect: 'manual', headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ xsrf: xsrf!, logout: 'yes' }) });
      const answers = await Promise.all([one, two, one, two, one, two].map(confirm));
      await Promise.all(answers.map((a) => a.arrayBuffer()));
      expect(answers.map((a) => a.status).sort()).toEqual([303, 400, 400, 400, 400, 400]);

      const admin1 = await db.admin();
      try {
        const logouts = await admin1.query("SELECT count(*)::int AS n FROM audit_entries WHERE tenant_id = 'default' AND type = 'logout' AND user_id = $1", [user.json.data.id]);
        expect(logouts.rows[0].n).toBe(1);
      } finally {
        await admin1.end();
      }
      const deadline = Date.now() + 5000;
      while (received.length === 0 && Date.now() < deadline) await sleep(20);
      await sleep(500);
      expect(received).toHaveLength(1);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("a user renamed through instance 1 reaches instance 2's userinfo, which had the user in memory", async () => {
    const redirectUri = 'http://127.0.0.1:9/profile-callback';
    const web = await createClient({ client_name: 'Profile app', application_type: 'web', redirect_uris: [redirectUri], grant_types: ['authorization_code'], scope: 'openid profile' });
    const rp = { id: web.client_id, secret: web.client_secret };
    const password = 'Correct-Horse-Battery-Two';
    const email = `renamed-${randomBytes(3).toString('hex')}@example.com`;
    const user = await call(one, 'POST', '/api/v1/users', { token: admin, body: { email, password, email_verified: true, name: 'Before Rename' } });
    expect(user.status).toBe(201);
    const verifier = randomBytes(32).toString('base64url');
    const authParams = {
      client_id: rp.id, redirect_uri: redirectUri, response_type: 'code', scope: 'openid profile', prompt: 'consent',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', state: randomBytes(8).toString('hex'),
    };
    const callback = await new CookieBrowser().authorize(one, `/oidc/v1/auth?${new URLSearchParams(authParams)}`, redirectUri, { email, password });
    const tokens = await form(two, '/token', { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier }, rp);
    expect(tokens.status, JSON.stringify(tokens.json)).toBe(200);
    const userinfo = async () => {
      const res = await fetch(`${two.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${tokens.json.access_token}` } });
      return { status: res.status, json: (await res.json()) as { name?: string } };
    };
    // Served twice by instance 2 (the second from its memory, once its listener is live).
    expect(await userinfo()).toMatchObject({ status: 200, json: { name: 'Before Rename' } });
    expect(await userinfo()).toMatchObject({ status: 200, json: { name: 'Before Rename' } });

    const renamed = await call(one, 'PATCH', `/api/v1/users/${user.json.data.id}`, { token: admin, body: { name: 'After Rename' } });
    expect(renamed.status).toBe(200);
    // The database's notice reaches instance 2 within moments (its memory would otherwise hold the
    // old name for minutes).
    const deadline = Date.now() + 2000;
    let seen = await userinfo();
    while (seen.json.name !== 'After Rename' && Date.now() < deadline) {
      await sleep(20);
      seen = await userinfo();
    }
    expect(seen).toMatchObject({ status: 200, json: { name: 'After Rename' } });
  });

  it(`rate limits are one count across both instances (limit ${RATE_LIMIT_READ} reads)`, async () => {
    const c = await createClient({ client_name: 'Rate limited', grant_types: ['client_credentials'], scope: 'svc:clients:read' });
    const token = (await clientCredentials(one, { id: c.client_id, secret: c.client_secret })).json.access_token as string;
    const read = (i: Instance) => call(i, 'GET', `/api/v1/clients/${c.client_id}`, { token });
    const statuses: number[] = [];
    const remaining: Array<string | null> = [];
    for (const i of [one, two, one]) {
      const res = await read(i);
      statuses.push(res.status);
      remaining.push(res.headers.get('ratelimit-remaining'));
    }
    expect(statuses).toEqual([200, 200, 200]);
    expect(remaining).toEqual(['2', '1', '0']);
    for (const i of [two, one]) {
      const res = await read(i);
      expect(res.status).toBe(429);
      expect(res.json.type).toBe('urn:svc:error:rate-limited');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });
});

/** Just enough of a browser for the sign-in pages: a cookie jar, manual redirects, the two forms. */
class CookieBrowser {
  private readonly jar = new Map<string, string>();

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/max-age=0|expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  private async request(url: string, init: RequestInit = {}): Promise<Response> {
    const cookie = this.cookieHeader();
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) } });
    this.remember(res);
    return res;
  }

  /** The Cookie header this browser sends. */
  cookieHeader(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** GET of a page through `via`: its HTML (200 expected). */
  async page(via: Instance, path: string): Promise<string> {
    const res = await this.request(`${via.url}${path}`);
    const html = await res.text();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${html.slice(0, 300)}`);
    return html;
  }

  /**
   * Follows the authorization request through the sign-in and consent pages until the redirect to
   * redirectUri, and returns that URL. Absolute redirects to the issuer go to `via` (the "load balancer").
   */
  async authorize(via: Instance, path: string, redirectUri: string, login?: { email: string; password: string }): Promise<URL> {
    let url = `${via.url}${path}`;
    let init: RequestInit = {};
    for (let step = 0; step < 20; step++) {
      const res = await this.request(url, init);
      init = {};
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.arrayBuffer();
        if (location.startsWith(redirectUri)) return new URL(location);
        const next = new URL(location, url);
        url = `${via.url}${next.pathname}${next.search}`;
        continue;
      }
      const html = await res.text();
      if (res.status !== 200) throw new Error(`sign-in step answered ${res.status}: ${html.slice(0, 300)}`);
      const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1]?.replace(/&amp;/g, '&');
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
      if (!action || !csrf) throw new Error(`unexpected page: ${html.slice(0, 300)}`);
      const fields: Record<string, string> = { csrf_token: csrf };
      if (html.includes('name="password"')) {
        if (!login) throw new Error('asked to sign in without credentials');
        Object.assign(fields, { email: login.email, password: login.password });
      } else fields.decision = 'allow';
      const target = new URL(action, url);
      url = `${via.url}${target.pathname}${target.search}`;
      init = { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() };
    }
    throw new Error('too many sign-in steps');
  }
}
