/**
 * Tenant isolation, exhaustively (issue 6 "Prove isolation"), on one multi-tenant app (PostgreSQL +
 * Redis, as test/e2e/multitenant-postgresql.test.ts starts it) with two tenants A and B, each with a
 * Management client holding every svc:* scope, a user, a confidential code-flow client (also allowed
 * the device grant), a registration token, a session signed in through the sign-in form over plain
 * HTTP with a cookie jar, an authorization code, a refresh token and a device code.
 *
 * Every credential or id of A is used against B, through three ways of addressing B:
 *   - `header`:    x-tenant-id: B;
 *   - `subdomain`: Host: B.localhost;
 *   - `conflict`:  Host says B, x-tenant-id says A (the host wins, and the Cookie header is dropped).
 * Matrix, per way:
 *   (a) every Management operation (allOperations minus platform ones, test/helpers/hostile.ts) on B
 *       with A's Management token -> 401; every operation with a path parameter on B with B's token
 *       and A's record id -> 404;
 *   (b) A's client credentials at B's token endpoint -> invalid_client; A's access token at B's
 *       userinfo -> 401 invalid_token and at B's introspection (as B's client) -> active false; A's
 *       authorization code, refresh token and device code at B's token endpoint -> invalid_grant;
 *       A's session cookie at B's /auth with prompt=none -> login_required; A's registration token
 *       at B's register-rp -> 401 invalid_token.
 * Both tenants' stored records (clients, users, registration tokens, signing keys) are compared
 * before and after. The number of cases is printed once and asserted, so a shrinking matrix fails.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropRedisKeys, startTestApp, type TestApp, BOOTSTRAP_ID, BOOTSTRAP_SECRET } from '../helpers/app.js';
import { ALL_SCOPES, allOperations, hasParams, keyOf, recordParamOps, realPath, validBody, VALID_QUERIES, type Fixture, type Operation } from '../helpers/hostile.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send, type TenantRequest, type TenantResponse } from '../helpers/tenant-http.js';

const RESOURCE = 'urn:svc:api:v1';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const REDIRECT = 'http://127.0.0.1:9/cb';
const PASSWORD = 'Correct-Horse-Battery-9';
const HIGH = '100000';
const run = randomBytes(3).toString('hex');

// ---------------------------------------------------------------------------------------------
// HTTP with a Host header of our choosing (fetch will not send one), as in multitenant-postgresql.

type Res = TenantResponse;
type Send = TenantRequest;

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/**
 * The sign-in pages over plain HTTP with a cookie jar (test/e2e/two-instances.test.ts's
 * CookieBrowser, here addressed by subdomain through node:http): follows redirects, fills the
 * sign-in form and allows consent, and returns the redirect to REDIRECT.
 */
class CookieJar {
  readonly jar = new Map<string, string>();
  constructor(private readonly port: number, private readonly sub: string) {}

  get header(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private remember(res: Res): void {
    for (const line of res.setCookie) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/max-age=0|expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  async authorize(path: string, login?: { email: string; password: string }): Promise<URL> {
    let next: { method: string; path: string; form?: Record<string, string> } = { method: 'GET', path };
    for (let step = 0; step < 20; step++) {
      const res = await send(this.port, next.method, next.path, { sub: this.sub, cookie: this.header, form: next.form });
      this.remember(res);
      const location = res.headers.location;
      if (res.status >= 300 && res.status < 400 && location) {
        if (location.startsWith(REDIRECT)) return new URL(location);
        const url = new URL(location, `http://${this.sub}.localhost:${this.port}${next.path}`);
        next = { method: 'GET', path: `${url.pathname}${url.search}` };
        continue;
      }
      if (res.status !== 200) throw new Error(`sign-in step answered ${res.status}: ${res.text.slice(0, 300)}`);
      const action = /<form method="post" action="([^"]+)"/.exec(res.text)?.[1]?.replace(/&amp;/g, '&');
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(res.text)?.[1];
      if (!action || !csrf) throw new Error(`unexpected page: ${res.text.slice(0, 300)}`);
      const fields: Record<string, string> = { csrf_token: csrf };
      if (res.text.includes('name="password"')) {
        if (!login) throw new Error('asked to sign in without credentials');
        Object.assign(fields, { email: login.email, password: login.password });
      } else fields.decision = 'allow';
      const target = new URL(action, `http://${this.sub}.localhost:${this.port}${next.path}`);
      next = { method: 'POST', path: `${target.pathname}${target.search}`, form: fields };
    }
    throw new Error('too many sign-in steps');
  }
}

// ---------------------------------------------------------------------------------------------

interface Tenant {
  slug: string;
  /** Management client with every svc:* scope, and its token. */
  mgmt: { id: string; secret: string; token: string };
  /** Confidential code-flow client (authorization_code, refresh_token, device_code). */
  rp: { id: string; secret: string };
  fixture: Fixture;
  registrationToken: string;
  user: { id: string; email: string };
  accessToken: string;
  refreshToken: string;
  /** An authorization code not redeemed. */
  code: string;
  verifier: string;
  deviceCode: string;
  /** The session cookies of the signed-in user, as a Cookie header. */
  cookie: string;
}

type Way = 'header' | 'subdomain' | 'conflict';
const WAYS: Way[] = ['header', 'subdomain', 'conflict'];
/** How to address B: by header, by subdomain, or host B with a header naming A. */
const toB = (way: Way, a: Tenant, b: Tenant): Send => (way === 'header' ? { tenant: b.slug } : way === 'subdomain' ? { sub: b.slug } : { sub: b.slug, tenant: a.slug });

const OIDC_CASES = ['client credentials', 'userinfo', 'introspection', 'authorization code', 'refresh token', 'session cookie', 'registration token', 'device code'] as const;
/** Every operation of the table with A's token, every parameterised one with A's ids, the OIDC cases: each way. */
const expectedCases = () => 3 * (allOperations.length + recordParamOps.length + OIDC_CASES.length);
/** Authorization requests need PKCE; a silent one never reaches the token endpoint. */
const PKCE = { code_challenge: createHash('sha256').update('unused-verifier-unused-verifier-unused-verifier').digest('base64url'), code_challenge_method: 'S256' };

describe('tenant isolation (two tenants, every endpoint, three ways of addressing)', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  let A: Tenant;
  let B: Tenant;
  let cases = 0;
  const disco: Record<string, string> = {};

  const oidcPath = (name: string) => new URL(disco[name]!).pathname;

  async function platformToken(scope: string): Promise<string> {
    const res = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', auth: basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET), form: { grant_type: 'client_credentials', resource: RESOURCE, scope } });
    if (res.status !== 200) throw new Error(`platform token: ${res.status} ${res.text}`);
    return res.json.access_token as string;
  }

  async function setUp(name: string): Promise<Tenant> {
    const slug = `${name}-${run}`;
    const created = await send(port, 'POST', '/api/v1/tenants', { token: await platformToken('svc:tenants:write'), body: { slug, display_name: `Tenant ${name}` } });
    expect(created.status, created.text).toBe(201);
    // Holding what the management client will be allowed (issue 12, hole 3).
    const cross = await platformToken(['svc:cross-tenant:write', 'svc:clients:write', ...ALL_SCOPES].join(' '));
    const mkClient = async (body: Record<string, unknown>) => {
      const res = await send(port, 'POST', '/api/v1/clients', { tenant: slug, token: cross, body });
      expect(res.status, res.text).toBe(201);
      return { id: res.json.data.client_id as string, secret: res.json.data.client_secret as string };
    };
    const mgmt = await mkClient({ client_name: `${name} management`, grant_types: ['client_credentials'], scope: ALL_SCOPES.join(' ') });
    const tok = await send(port, 'POST', '/oidc/v1/token', { tenant: slug, auth: basic(mgmt.id, mgmt.secret), form: { grant_type: 'client_credentials', resource: RESOURCE, scope: ALL_SCOPES.join(' ') } });
    expect(tok.status, tok.text).toBe(200);
    const token = tok.json.access_token as string;
    const rp = await mkClient({
      client_name: `${name} web`,
      application_type: 'web',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token', DEVICE_GRANT],
      scope: 'openid profile offline_access',
      first_party: true,
    });
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await send(port, method, path, { tenant: slug, token, body });
      expect([200, 201, 204], `${method} ${path}: ${res.text}`).toContain(res.status);
      return res.json;
    };
    const email = `${name}-${randomBytes(4).toString('hex')}@example.com`;
    const user = (await api('POST', '/api/v1/users', { email, password: PASSWORD, email_verified: true, name: `User ${name}` })).data;
    await api('POST', `/api/v1/users/${user.id}/lock`);
    await api('DELETE', `/api/v1/users/${user.id}/lock`);
    const reg = (await api('POST', '/api/v1/registration-tokens', { expires_in: 86400, max_usage_count: 5, note: `${name}` })).data;

    // Sign in through the form (cookie jar, by subdomain) and take a code, twice: one redeemed
    // (access and refresh token), one kept unredeemed for the matrix.
    const jar = new CookieJar(port, slug);
    const authorize = async (login?: { email: string; password: string }) => {
      const verifier = randomBytes(32).toString('base64url');
      const params = new URLSearchParams({
        client_id: rp.id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid profile offline_access', prompt: 'consent',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', state: 'st', nonce: 'nn',
      });
      const cb = await jar.authorize(`/oidc/v1/auth?${params}`, login);
      const code = cb.searchParams.get('code');
      expect(code, cb.toString()).toBeTruthy();
      return { code: code!, verifier };
    };
    const first = await authorize({ email, password: PASSWORD });
    const redeemed = await send(port, 'POST', '/oidc/v1/token', { sub: slug, auth: basic(rp.id, rp.secret), form: { grant_type: 'authorization_code', code: first.code, redirect_uri: REDIRECT, code_verifier: first.verifier } });
    expect(redeemed.status, redeemed.text).toBe(200);
    expect(redeemed.json.refresh_token).toEqual(expect.any(String));
    const second = await authorize();

    const device = await send(port, 'POST', new URL(disco.device_authorization_endpoint!).pathname, { tenant: slug, auth: basic(rp.id, rp.secret), form: { scope: 'openid' } });
    expect(device.status, device.text).toBe(200);

    // Fixture ids for every parameterised operation (test/helpers/hostile.ts PARAM_SOURCES): a
    // session as oidc-provider stores it, the active key, an audit entry.
    const jti = `iso-session-${name}-${run}`;
    const now = Math.floor(Date.now() / 1000);
    await t.app.ctx.storage.oidc.upsert(slug, 'Session', jti, { jti, kind: 'Session', uid: `uid-${jti}`, iat: now, exp: now + 3600, accountId: user.id, loginTs: now, authorizations: {} }, now + 3600);
    const keys = await t.app.ctx.storage.keys.list(slug);
    const audit = await t.app.ctx.storage.audit.list(slug, {}, { limit: 1, include_count: false });
    return {
      slug,
      mgmt: { ...mgmt, token },
      rp,
      fixture: {
        client: rp,
        userId: user.id,
        otherUserId: user.id,
        registrationTokenJti: reg.jti,
        sessionJti: jti,
        kid: keys.find((k) => k.status === 'active')!.kid,
        auditId: audit.items[0]!.id,
      },
      registrationToken: reg.token,
      user: { id: user.id, email },
      accessToken: redeemed.json.access_token,
      refreshToken: redeemed.json.refresh_token,
      code: second.code,
      verifier: second.verifier,
      deviceCode: device.json.device_code,
      cookie: jar.header,
    };
  }

  /** Every record a tenant owns that the matrix could change (audit entries and OIDC artefacts aside). */
  async function snapshot(slug: string): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const table of ['clients', 'users', 'registration_tokens', 'signing_keys']) {
      // Usage counters (tokens_issued, last_used_at) are flushed in batches from tokens legitimately
      // issued during set-up and the controls, whenever the batch runs: left out.
      const row = "(to_jsonb(x) - 'tokens_issued' - 'last_used_at')::text";
      const rows = await t.sql(`SELECT count(*)::int AS n, md5(coalesce(string_agg(${row}, '|' ORDER BY ${row}), '')) AS h FROM ${table} x WHERE tenant_id = ?`, [slug]);
      out[table] = `${rows[0]!.n as number}:${rows[0]!.h as string}`;
    }
    return out;
  }

  beforeAll(async () => {
    prefix = uniquePrefix('iso');
    t = await startTestApp({
      MULTI_TENANCY_ENABLED: 'true',
      STORAGE_ADAPTER: 'postgresql',
      REDIS_URL: SHARED_REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      SECURITY_RATE_LIMIT_READ: HIGH,
      SECURITY_RATE_LIMIT_WRITE: HIGH,
      SECURITY_RATE_LIMIT_DELETE: HIGH,
      SECURITY_RATE_LIMIT_SENSITIVE: HIGH,
    });
    port = t.app.port;
    const d = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: '_platforms' });
    Object.assign(disco, d.json);
    A = await setUp('a');
    B = await setUp('b');
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('the credentials work where they belong (controls)', async () => {
    for (const x of [A, B]) {
      expect((await send(port, 'GET', '/api/v1/clients', { tenant: x.slug, token: x.mgmt.token })).status).toBe(200);
      const me = await send(port, 'GET', oidcPath('userinfo_endpoint'), { sub: x.slug, token: x.accessToken });
      expect(me.status, me.text).toBe(200);
      expect(me.json.sub).toBe(x.user.id);
      const intro = await send(port, 'POST', oidcPath('introspection_endpoint'), { sub: x.slug, auth: basic(x.rp.id, x.rp.secret), form: { token: x.accessToken } });
      expect(intro.json.active).toBe(true);
      // The session cookie signs in silently at its own tenant.
      const params = new URLSearchParams({ client_id: x.rp.id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', prompt: 'none', state: 's', ...PKCE });
      const silent = await send(port, 'GET', `/oidc/v1/auth?${params}`, { sub: x.slug, cookie: x.cookie });
      expect(silent.status).toBeGreaterThanOrEqual(300);
      expect(new URL(silent.headers.location!).searchParams.get('code')).toBeTruthy();
    }
  });

  describe.each(WAYS)('B addressed by %s', (way) => {
    let before: Array<Record<string, string>>;
    beforeAll(async () => {
      before = [await snapshot(A.slug), await snapshot(B.slug)];
      // Something to compare: both tenants hold records in every table.
      for (const snap of before) for (const v of Object.values(snap)) expect(v).not.toMatch(/^0:/);
    });
    afterAll(async () => {
      // Neither tenant changed: B was never acted on with A's credentials, A never through B.
      expect([await snapshot(A.slug), await snapshot(B.slug)]).toEqual(before);
    });

    it.each(allOperations.map((o) => [keyOf(o), o] as [string, Operation]))("%s on B with A's Management token: 401", async (_name, o) => {
      const path = realPath(o, B.fixture) + (VALID_QUERIES[keyOf(o)] ?? '');
      const res = await send(port, o.method, path, { ...toB(way, A, B), token: A.mgmt.token, body: validBody(o) });
      expect(res.status, res.text).toBe(401);
      cases++;
    });

    it.each(recordParamOps.map((o) => [keyOf(o), o] as [string, Operation]))("%s on B with B's token and A's id: 404", async (_name, o) => {
      expect(hasParams(o)).toBe(true);
      const path = realPath(o, A.fixture) + (VALID_QUERIES[keyOf(o)] ?? '');
      const res = await send(port, o.method, path, { ...toB(way, A, B), token: B.mgmt.token, body: validBody(o) });
      expect(res.status, res.text).toBe(404);
      cases++;
    });

    it("A's client credentials at B's token endpoint: invalid_client", async () => {
      const res = await send(port, 'POST', '/oidc/v1/token', { ...toB(way, A, B), auth: basic(A.mgmt.id, A.mgmt.secret), form: { grant_type: 'client_credentials', resource: RESOURCE, scope: 'svc:clients:read' } });
      expect(res.status).toBe(401);
      expect(res.json.error).toBe('invalid_client');
      cases++;
    });

    it("A's access token at B's userinfo: 401 invalid_token", async () => {
      const res = await send(port, 'GET', oidcPath('userinfo_endpoint'), { ...toB(way, A, B), token: A.accessToken });
      expect(res.status).toBe(401);
      expect(res.json?.error ?? res.headers['www-authenticate']).toMatch(/invalid_token/);
      cases++;
    });

    it("A's access token at B's introspection (as B's client): active false", async () => {
      const res = await send(port, 'POST', oidcPath('introspection_endpoint'), { ...toB(way, A, B), auth: basic(B.rp.id, B.rp.secret), form: { token: A.accessToken } });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ active: false });
      cases++;
    });

    it("A's authorization code at B's token endpoint: invalid_grant", async () => {
      const res = await send(port, 'POST', '/oidc/v1/token', { ...toB(way, A, B), auth: basic(B.rp.id, B.rp.secret), form: { grant_type: 'authorization_code', code: A.code, redirect_uri: REDIRECT, code_verifier: A.verifier } });
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('invalid_grant');
      cases++;
    });

    it("A's refresh token at B's token endpoint: invalid_grant", async () => {
      const res = await send(port, 'POST', '/oidc/v1/token', { ...toB(way, A, B), auth: basic(B.rp.id, B.rp.secret), form: { grant_type: 'refresh_token', refresh_token: A.refreshToken } });
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('invalid_grant');
      cases++;
    });

    it("A's session cookie at B's /auth with prompt=none: login_required", async () => {
      const params = new URLSearchParams({ client_id: B.rp.id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', prompt: 'none', state: 's', ...PKCE });
      const res = await send(port, 'GET', `/oidc/v1/auth?${params}`, { ...toB(way, A, B), cookie: A.cookie });
      expect(res.status, res.text).toBeGreaterThanOrEqual(300);
      const location = new URL(res.headers.location!);
      expect(location.searchParams.get('error')).toBe('login_required');
      expect(location.searchParams.get('code')).toBeNull();
      cases++;
    });

    it("A's registration token at B's register-rp: 401 invalid_token", async () => {
      const res = await send(port, 'POST', '/oidc/v1/register-rp', { ...toB(way, A, B), token: A.registrationToken, body: { client_name: 'intruder', redirect_uris: [REDIRECT] } });
      expect(res.status, res.text).toBe(401);
      expect(res.json.error).toBe('invalid_token');
      cases++;
    });

    it("A's device code at B's token endpoint: invalid_grant", async () => {
      const res = await send(port, 'POST', '/oidc/v1/token', { ...toB(way, A, B), auth: basic(B.rp.id, B.rp.secret), form: { grant_type: DEVICE_GRANT, device_code: A.deviceCode } });
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('invalid_grant');
      cases++;
    });
  });

  it("with host B and header A, even B's own session cookie is not honoured (Cookie dropped)", async () => {
    const params = new URLSearchParams({ client_id: B.rp.id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', prompt: 'none', state: 's', ...PKCE });
    const own = await send(port, 'GET', `/oidc/v1/auth?${params}`, { sub: B.slug, cookie: B.cookie });
    expect(new URL(own.headers.location!).searchParams.get('code')).toBeTruthy();
    const conflicting = await send(port, 'GET', `/oidc/v1/auth?${params}`, { sub: B.slug, tenant: A.slug, cookie: B.cookie });
    expect(new URL(conflicting.headers.location!).searchParams.get('error')).toBe('login_required');
  });

  it("A's code and refresh token still work at A afterwards (B refused without consuming them)", async () => {
    const code = await send(port, 'POST', '/oidc/v1/token', { sub: A.slug, auth: basic(A.rp.id, A.rp.secret), form: { grant_type: 'authorization_code', code: A.code, redirect_uri: REDIRECT, code_verifier: A.verifier } });
    expect(code.status, code.text).toBe(200);
    const refresh = await send(port, 'POST', '/oidc/v1/token', { sub: A.slug, auth: basic(A.rp.id, A.rp.secret), form: { grant_type: 'refresh_token', refresh_token: A.refreshToken } });
    expect(refresh.status, refresh.text).toBe(200);
  });

  it('ran the whole matrix', () => {
    // The operation table grows with the API (41 operations and 25 with ids when this was written):
    // every one of them is in the matrix, none skipped.
    expect(allOperations.length).toBeGreaterThanOrEqual(41);
    expect(recordParamOps.length).toBeGreaterThanOrEqual(25);
    console.log(`isolation matrix: ${cases} cases (${allOperations.length} operations with A's token, ${recordParamOps.length} with A's ids, ${OIDC_CASES.length} OIDC cases; x${WAYS.length} ways of addressing B)`);
    expect(cases).toBe(expectedCases());
  });
});
