/**
 * Registration tokens (spec 4.8) and dynamic client registration (`POST {oidc}/register-rp`,
 * RFC 7591) against the real service.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

const TOKENS = '/api/v1/registration-tokens';
const REGISTER = '/oidc/v1/register-rp';
// svc:clients:write: the allow-* policies need it of the token's creator (issue 12, hole 3), and a
// registered client may be allowed only svc:* scopes the creator held (svc:clients:read here).
const ADMIN_SCOPES = [
  'svc:registration-tokens:read', 'svc:registration-tokens:write', 'svc:registration-tokens:delete', 'svc:clients:read', 'svc:clients:write',
];

interface TokenObject {
  jti: string;
  token?: string;
  expires_at: string;
  max_usage_count: number;
  current_usage_count: number;
  policies: string[];
  note?: string | null;
  created_at: string;
}

describe('registration tokens and register-rp', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.token(ADMIN_SCOPES);
  });
  afterAll(async () => t?.close());

  const createToken = async (body: Record<string, unknown> = {}): Promise<TokenObject & { token: string }> => {
    const res = await api(t, 'POST', TOKENS, { token: admin, body: { expires_in: 3600, max_usage_count: 5, ...body } });
    expect(res.status, res.text).toBe(201);
    return res.json.data;
  };
  const getToken = async (jti: string) => api(t, 'GET', `${TOKENS}/${encodeURIComponent(jti)}`, { token: admin });
  const register = (raw: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
    api(t, 'POST', REGISTER, { body, headers: { ...(raw !== undefined ? { authorization: `Bearer ${raw}` } : {}), ...headers } });
  const clientCount = async (): Promise<number> => {
    const res = await api(t, 'GET', '/api/v1/clients?include_count=true&limit=1', { token: admin });
    expect(res.status).toBe(200);
    return res.json.pagination.total_count;
  };
  /** Moves a token's expiry into the past, straight in the database (either backend). */
  const expireInDatabase = (jti: string) => t.sql('UPDATE registration_tokens SET expires_at = ? WHERE jti = ?', [new Date(Date.now() - 1000).toISOString(), jti]);

  describe('Management API', () => {
    it('creates a token: 201, raw token once, defaults, hash-only storage', async () => {
      const before = Date.now();
      const res = await api(t, 'POST', TOKENS, { token: admin, body: { expires_in: 600, max_usage_count: 3 } });
      expect(res.status).toBe(201);
      const d: TokenObject = res.json.data;
      expect(d.token).toMatch(/^[A-Za-z0-9_-]{43,}$/); // >= 32 random bytes, base64url
      expect(d.jti).toEqual(expect.any(String));
      expect(d.policies).toEqual(['general-policy']);
      expect(d.max_usage_count).toBe(3);
      expect(d.current_usage_count).toBe(0);
      expect(d.note).toBeNull(); // spec 2.7 lists note: present, null when none was given
      const expires = Date.parse(d.expires_at);
      expect(expires).toBeGreaterThanOrEqual(before + 600_000 - 1000);
      expect(expires).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);
      expect(Date.parse(d.created_at)).toBeGreaterThanOrEqual(before - 1000);

      const rows = await t.sql('SELECT * FROM registration_tokens WHERE jti = ?', [d.jti]);
      expect(rows).toHaveLength(1);
      const row = rows[0]!;
      expect(JSON.stringify(row)).not.toContain(d.token!);
      expect(row.token_hash).toBe(`$sha256$${createHash('sha256').update(d.token!).digest('base64url')}`);
    });

    it('never returns the raw token on get or list', async () => {
      const created = await createToken({ note: 'partner onboarding', policies: ['general-policy', 'native-only'] });
      const one = await getToken(created.jti);
      expect(one.status).toBe(200);
      expect(one.json.data).toEqual({ ...created, token: undefined });
      expect(one.text).not.toContain(created.token);
      expect('token' in one.json.data).toBe(false);

      const list = await api(t, 'GET', `${TOKENS}?limit=100`, { token: admin });
      expect(list.status).toBe(200);
      expect(list.text).not.toContain(created.token);
      const item = list.json.data.find((x: TokenObject) => x.jti === created.jti);
      expect(item).toMatchObject({ note: 'partner onboarding', policies: ['general-policy', 'native-only'] });
      expect('token' in item).toBe(false);
    });

    it.each([
      ['expires_in 299', 422, { expires_in: 299 }, 'expires_in'],
      ['expires_in 300', 201, { expires_in: 300 }, null],
      ['expires_in 2592000', 201, { expires_in: 2_592_000 }, null],
      ['expires_in 2592001', 422, { expires_in: 2_592_001 }, 'expires_in'],
      ['expires_in not an integer', 422, { expires_in: 300.5 }, 'expires_in'],
      ['max_usage_count 0', 422, { max_usage_count: 0 }, 'max_usage_count'],
      ['max_usage_count 1', 201, { max_usage_count: 1 }, null],
      ['max_usage_count 1000', 201, { max_usage_count: 1000 }, null],
      ['max_usage_count 1001', 422, { max_usage_count: 1001 }, 'max_usage_count'],
      ['policies with 0 items', 422, { policies: [] }, 'policies'],
      ['policies with 10 items', 201, { policies: Array(10).fill('general-policy') }, null],
      ['policies with 11 items', 422, { policies: Array(11).fill('general-policy') }, 'policies'],
      ['a 129-char policy', 422, { policies: ['p'.repeat(129)] }, 'policies.0'],
      ['an empty policy name', 422, { policies: [''] }, 'policies.0'],
      ['an unknown policy', 422, { policies: ['general-policy', 'allow-everything'] }, 'policies.1'],
      ['note of 500 chars', 201, { note: 'n'.repeat(500) }, null],
      ['note of 501 chars', 422, { note: 'n'.repeat(501) }, 'note'],
      ['an unknown field', 422, { admin: true }, 'admin'],
    ])('%s -> %s', async (_name, status, over, field) => {
      const res = await api(t, 'POST', TOKENS, { token: admin, body: { expires_in: 3600, max_usage_count: 1, ...over } });
      expect(res.status, res.text).toBe(status);
      if (field) {
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(res.json.type).toBe('urn:svc:error:validation');
        expect(res.json.errors.map((e: { field: string }) => e.field)).toContain(field);
      } else {
        expect(res.json.data.token).toEqual(expect.any(String));
        if (Array.isArray((over as { policies?: unknown }).policies)) expect(res.json.data.policies).toEqual(['general-policy']);
        if ('note' in over) expect(res.json.data.note).toBe((over as { note: string }).note);
      }
    });

    it('requires expires_in and max_usage_count and a JSON body', async () => {
      const res = await api(t, 'POST', TOKENS, { token: admin, body: {} });
      expect(res.status).toBe(422);
      expect(res.json.errors.map((e: { field: string }) => e.field).sort()).toEqual(['expires_in', 'max_usage_count']);
      const form = await api(t, 'POST', TOKENS, { token: admin, body: 'expires_in=300', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(form.status).toBe(415);
    });

    it('checks the scope of each operation', async () => {
      const readOnly = await t.token('svc:registration-tokens:read');
      expect((await api(t, 'POST', TOKENS, { token: readOnly, body: { expires_in: 300, max_usage_count: 1 } })).status).toBe(403);
      expect((await api(t, 'DELETE', `${TOKENS}/whatever`, { token: readOnly })).status).toBe(403);
      expect((await api(t, 'GET', TOKENS)).status).toBe(401);
    });

    it('paginates the list with opaque cursors', async () => {
      const jtis = new Set<string>();
      for (let i = 0; i < 3; i++) jtis.add((await createToken()).jti);
      const seen: string[] = [];
      let after: string | null = null;
      let total: number | undefined;
      do {
        const q: string = `limit=2&include_count=true${after ? `&after=${encodeURIComponent(after)}` : ''}`;
        const res = await api(t, 'GET', `${TOKENS}?${q}`, { token: admin });
        expect(res.status).toBe(200);
        expect(res.json.data.length).toBeLessThanOrEqual(2);
        total = res.json.pagination.total_count;
        seen.push(...res.json.data.map((x: TokenObject) => x.jti));
        after = res.json.pagination.has_more ? res.json.pagination.next_cursor : null;
      } while (after);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.length).toBe(total);
      for (const jti of jtis) expect(seen).toContain(jti);
      expect((await api(t, 'GET', `${TOKENS}?after=tampered.cursor`, { token: admin })).status).toBe(422);
    });

    it('revokes: 204, then 404 on get and delete, unlisted; unknown is 404', async () => {
      const created = await createToken();
      expect((await api(t, 'DELETE', `${TOKENS}/${created.jti}`, { token: admin })).status).toBe(204);
      const after = await getToken(created.jti);
      expect(after.status).toBe(404);
      expect(after.json.type).toBe('urn:svc:error:not-found');
      expect((await api(t, 'DELETE', `${TOKENS}/${created.jti}`, { token: admin })).status).toBe(404);
      const list = await api(t, 'GET', `${TOKENS}?limit=100`, { token: admin });
      expect(list.json.data.map((x: TokenObject) => x.jti)).not.toContain(created.jti);
      expect((await getToken('no-such-token')).status).toBe(404);
      expect((await api(t, 'DELETE', `${TOKENS}/no-such-token`, { token: admin })).status).toBe(404);

      const audit = await t.app.ctx.storage.audit.list('default', { type: 'registration_token.revoked' }, { limit: 100, include_count: false });
      expect(audit.items.some((e) => e.details.jti === created.jti && e.client_id === 'bootstrap-admin')).toBe(true);
      const made = await t.app.ctx.storage.audit.list('default', { type: 'registration_token.created' }, { limit: 100, include_count: false });
      expect(made.items.some((e) => e.details.jti === created.jti)).toBe(true);
    });

    it('drops expired tokens from the list', async () => {
      const created = await createToken();
      await expireInDatabase(created.jti);
      const list = await api(t, 'GET', `${TOKENS}?limit=100`, { token: admin });
      expect(list.json.data.map((x: TokenObject) => x.jti)).not.toContain(created.jti);
    });

    it('drops a used-up token from the list (spec 4.8 lists active tokens); it is still read and revoked by jti', async () => {
      const created = await createToken({ max_usage_count: 3 });
      const listed = async () => {
        const res = await api(t, 'GET', `${TOKENS}?limit=100&include_count=true`, { token: admin });
        expect(res.status).toBe(200);
        return { jtis: res.json.data.map((x: TokenObject) => x.jti), total: res.json.pagination.total_count as number };
      };
      for (let i = 0; i < 3; i++) {
        expect((await listed()).jtis, `before use ${i + 1}`).toContain(created.jti);
        const res = await register(created.token, { client_name: `used ${i}`, redirect_uris: ['https://rp.example.com/cb'] });
        expect(res.status, res.text).toBe(201);
      }
      const refused = await register(created.token, { client_name: 'one too many', redirect_uris: ['https://rp.example.com/cb'] });
      expect(refused.status).toBe(401);
      expect(refused.json.error).toBe('invalid_token');
      const after = await listed();
      expect(after.jtis).not.toContain(created.jti);
      expect(after.total).toBe(after.jtis.length);
      // Read by jti as before: its counts say why it is no longer listed.
      const read = await getToken(created.jti);
      expect(read.status).toBe(200);
      expect(read.json.data).toMatchObject({ jti: created.jti, max_usage_count: 3, current_usage_count: 3 });
      expect((await api(t, 'DELETE', `${TOKENS}/${created.jti}`, { token: admin })).status).toBe(204);
      expect((await getToken(created.jti)).status).toBe(404);
    });
  });

  describe('POST {oidc}/register-rp', () => {
    it('is announced in discovery, so an RFC 7591 client (openid-client) registers itself', async () => {
      const disc = await (await fetch(`${t.url}/oidc/v1/.well-known/openid-configuration`)).json();
      expect(disc.registration_endpoint).toBe(`${t.issuer}/register-rp`);
      const tok = await createToken();
      // openid-client discovers the issuer, then posts to its registration_endpoint with the token.
      const config = await oidc.dynamicClientRegistration(
        new URL(t.issuer),
        { client_name: 'Self-registered RP', redirect_uris: ['https://rp.example.com/cb'], grant_types: ['authorization_code'] },
        undefined,
        { initialAccessToken: tok.token, execute: [oidc.allowInsecureRequests] },
      );
      const clientId = config.clientMetadata().client_id;
      expect(clientId).toEqual(expect.any(String));
      const listed = await api(t, 'GET', `/api/v1/clients/${encodeURIComponent(clientId)}`, { token: admin });
      expect(listed.status).toBe(200);
      expect(listed.json.data.client_name).toBe('Self-registered RP');
    });

    it('registers a public native client with a custom-scheme redirect, visible and usable', async () => {
      const tok = await createToken({ policies: ['native-only'] });
      const res = await register(tok.token, {
        application_type: 'native',
        client_name: 'Mobile app',
        redirect_uris: ['com.example.app:/oauth/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        scope: 'openid profile offline_access',
        contacts: ['dev@example.com'],
        unknown_vendor_field: 'ignored',
      });
      expect(res.status, res.text).toBe(201);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const c = res.json;
      expect(c.client_id).toEqual(expect.any(String));
      expect(c.client_secret).toBeUndefined();
      expect(c.client_secret_expires_at).toBeUndefined();
      expect(c.token_endpoint_auth_method).toBe('none');
      expect(c.application_type).toBe('native');
      expect(c.redirect_uris).toEqual(['com.example.app:/oauth/callback']);
      expect(c.response_types).toEqual(['code']);
      expect(c.unknown_vendor_field).toBeUndefined();
      expect(Math.abs(c.client_id_issued_at - Date.now() / 1000)).toBeLessThan(10);

      const viaApi = await api(t, 'GET', `/api/v1/clients/${encodeURIComponent(c.client_id)}`, { token: admin });
      expect(viaApi.status).toBe(200);
      expect(viaApi.json.data).toMatchObject({
        client_id: c.client_id, client_name: 'Mobile app', application_type: 'native', active: true, first_party: false,
        redirect_uris: ['com.example.app:/oauth/callback'], scope: 'openid profile offline_access', tags: ['dynamic-registration'],
      });
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(1);

      // The authorization endpoint accepts it (an unknown client would get an error, not a redirect to the interaction).
      const auth = await fetch(`${t.url}/oidc/v1/auth?${new URLSearchParams({
        client_id: c.client_id, redirect_uri: 'com.example.app:/oauth/callback', response_type: 'code', scope: 'openid',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', state: 'xyz',
      })}`, { redirect: 'manual' });
      expect(auth.status).toBe(303);
      expect(auth.headers.get('location')).not.toContain('error=');

      const audit = await t.app.ctx.storage.audit.list('default', { type: 'client.registered', client_id: c.client_id }, { limit: 10, include_count: false });
      expect(audit.items).toHaveLength(1);
      expect(audit.items[0]!.details).toMatchObject({ client_id: c.client_id, registration_token: tok.jti });
    });

    it('registers a confidential web client with a secret', async () => {
      const tok = await createToken();
      const res = await register(tok.token, {
        client_name: 'Web app', redirect_uris: ['https://app.example.com/callback'], post_logout_redirect_uris: ['https://app.example.com/'],
        client_uri: 'https://app.example.com', id_token_signed_response_alg: 'RS256', default_max_age: 3600,
      });
      expect(res.status, res.text).toBe(201);
      expect(res.json).toMatchObject({
        client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), client_secret_expires_at: 0,
        token_endpoint_auth_method: 'client_secret_basic', application_type: 'web', grant_types: ['authorization_code'],
        // No offline_access by default without the refresh_token grant: it could never act.
        scope: 'openid profile email', default_max_age: 3600, client_uri: 'https://app.example.com',
      });
      const viaApi = await api(t, 'GET', `/api/v1/clients/${encodeURIComponent(res.json.client_id)}`, { token: admin });
      expect(viaApi.status).toBe(200);
      expect(viaApi.json.data.client_secret).toBeUndefined();
      expect(viaApi.json.data.post_logout_redirect_uris).toEqual(['https://app.example.com/']);
    });

    const tokenEndpoint = async () => {
      const disc = (await api(t, 'GET', '/oidc/v1/.well-known/openid-configuration')).json;
      // The issuer names localhost; the test server listens on 127.0.0.1 only.
      return { ...disc, token_endpoint: String(disc.token_endpoint).replace(new URL(t.issuer).origin, t.url) } as oidc.ServerMetadata;
    };

    it('a client_credentials client registered under allow-client-credentials obtains a token', async () => {
      const tok = await createToken({ policies: ['allow-client-credentials'] });
      const res = await register(tok.token, { client_name: 'Backend job', grant_types: ['client_credentials'] });
      expect(res.status, res.text).toBe(201);
      expect(res.json.grant_types).toEqual(['client_credentials']);
      const config = new oidc.Configuration(await tokenEndpoint(), res.json.client_id, {}, oidc.ClientSecretBasic(res.json.client_secret));
      oidc.allowInsecureRequests(config);
      const tokens = await oidc.clientCredentialsGrant(config);
      expect(tokens.access_token).toEqual(expect.any(String));
      expect(tokens.token_type.toLowerCase()).toBe('bearer');
      expect(tokens.expires_in).toBeGreaterThan(0);

      // A wrong secret is refused, so the grant above really authenticated the registered client.
      const wrong = new oidc.Configuration(await tokenEndpoint(), res.json.client_id, {}, oidc.ClientSecretBasic('not-the-secret'));
      oidc.allowInsecureRequests(wrong);
      const err = await oidc.clientCredentialsGrant(wrong).then(() => undefined, (e: unknown) => e as { status?: number; response?: Response });
      expect(err?.status).toBe(401);
      expect(((await err!.response!.json()) as { error: string }).error).toBe('invalid_client');
    });

    it('a client registered under allow-management-scopes gets a Management API token', async () => {
      const tok = await createToken({ policies: ['allow-client-credentials', 'allow-management-scopes'] });
      const res = await register(tok.token, { client_name: 'Automation', grant_types: ['client_credentials'], scope: 'svc:clients:read' });
      expect(res.status, res.text).toBe(201);
      const basic = Buffer.from(`${res.json.client_id}:${res.json.client_secret}`).toString('base64');
      const tr = await fetch(`${t.url}/oidc/v1/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }),
      });
      const body = (await tr.json()) as { access_token: string };
      expect(tr.status).toBe(200);
      const list = await api(t, 'GET', '/api/v1/clients?limit=1', { token: body.access_token });
      expect(list.status).toBe(200);
    });

    it.each([
      ['client_credentials without allow-client-credentials', ['general-policy'], { grant_types: ['client_credentials'] }, 'grant_types'],
      ['svc:* scopes without allow-management-scopes', ['allow-client-credentials'], { grant_types: ['client_credentials'], scope: 'svc:clients:read' }, 'scope'],
      ['a non-standard scope', ['general-policy'], { redirect_uris: ['https://a.example.com/cb'], scope: 'openid admin' }, 'scope'],
      ['a web client under native-only', ['native-only'], { redirect_uris: ['https://a.example.com/cb'] }, 'application_type'],
      ['first_party', ['general-policy'], { redirect_uris: ['https://a.example.com/cb'], first_party: true }, 'first_party'],
      ['application_type spa', ['general-policy'], { application_type: 'spa', redirect_uris: ['https://a.example.com/cb'] }, 'application_type'],
      ['a public client with client_credentials', ['allow-client-credentials'], { grant_types: ['client_credentials'], token_endpoint_auth_method: 'none' }, 'grant_types'],
      ['a bad contact', ['general-policy'], { redirect_uris: ['https://a.example.com/cb'], contacts: ['not-an-email'] }, 'contacts.0'],
      ['an unsupported grant', ['general-policy'], { grant_types: ['implicit'], redirect_uris: ['https://a.example.com/cb'] }, 'grant_types.0'],
    ])('rejects %s with 400 invalid_client_metadata and leaves the counter alone', async (_name, policies, body, field) => {
      const tok = await createToken({ policies });
      const before = await clientCount();
      const res = await register(tok.token, { client_name: 'x', ...body });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error).toBe('invalid_client_metadata');
      expect(res.json.error_description).toContain(`${field}:`);
      expect(await clientCount()).toBe(before);
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(0);
    });

    it.each([
      ['an http redirect for a web client', { redirect_uris: ['http://app.example.com/cb'] }, 'redirect_uris.0'],
      ['a redirect with a fragment', { redirect_uris: ['https://app.example.com/cb#x'] }, 'redirect_uris.0'],
      ['no redirect for the code grant', {}, 'redirect_uris'],
      ['a non-reverse-domain scheme for a native client', { application_type: 'native', redirect_uris: ['myapp:/cb'] }, 'redirect_uris.0'],
      // Compared as exact strings: a wildcard only matches itself, a non-ASCII host not the punycode a library sends.
      ['a wildcard host', { redirect_uris: ['https://*.example.com/cb'] }, 'redirect_uris.0'],
      ['a wildcard path', { redirect_uris: ['https://rp.example.com/ok', 'https://rp.example.com/*'] }, 'redirect_uris.1'],
      ['an internationalised host not in punycode', { redirect_uris: ['https://bücher.example/cb'] }, 'redirect_uris.0'],
      ['a malformed percent-escape', { redirect_uris: ['https://rp.example/%zz'] }, 'redirect_uris.0'],
      ['a redirect listed twice', { redirect_uris: ['https://rp.example.com/cb', 'https://rp.example.com/cb'] }, 'redirect_uris.1'],
    ])('rejects %s with 400 invalid_redirect_uri', async (_name, body, field) => {
      const tok = await createToken();
      const res = await register(tok.token, body);
      expect(res.status, res.text).toBe(400);
      expect(res.json.error).toBe('invalid_redirect_uri');
      expect(res.json.error_description).toContain(`${field}:`);
    });

    it('rejects bodies that are not JSON objects', async () => {
      const tok = await createToken();
      const form = await register(tok.token, 'client_name=x', { 'content-type': 'application/x-www-form-urlencoded' });
      expect(form.status).toBe(415);
      expect(form.json.error).toBe('invalid_client_metadata');
      const broken = await register(tok.token, '{"client_name":');
      expect(broken.status).toBe(400);
      expect(broken.json.error).toBe('invalid_client_metadata');
      const array = await register(tok.token, '[]');
      expect(array.status).toBe(400);
      expect(array.json.error).toBe('invalid_client_metadata');
      const fragment = await register(tok.token, { redirect_uris: ['https://app.example.com/cb'], backchannel_logout_uri: 'https://app.example.com/bc#x' });
      expect(fragment.status, fragment.text).toBe(400);
      expect(fragment.json.error).toBe('invalid_client_metadata');
      // Text no backend stores as sent is refused, not altered (PostgreSQL cannot hold U+0000).
      for (const name of ['App\u0000', 'App\ud800']) {
        const odd = await register(tok.token, { redirect_uris: ['https://app.example.com/cb'], client_name: name });
        expect(odd.status, odd.text).toBe(400);
        expect(odd.json).toMatchObject({ error: 'invalid_client_metadata', error_description: 'client_name: must not contain NUL characters or unpaired surrogates' });
      }
      // A member name is the caller's text: error_description keeps to RFC 6749 5.2's characters.
      const named = await register(tok.token, { redirect_uris: ['https://app.example.com/cb'], 'n\u00e4me"\\': 'App\u0000' });
      expect(named.status, named.text).toBe(400);
      expect(named.json).toMatchObject({ error: 'invalid_client_metadata', error_description: 'n?me??: must not contain NUL characters or unpaired surrogates' });
      expect(named.json.error_description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]*$/);
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(0);
    });

    it('returns the registered back-channel session requirement (RFC 7591 3.2.1) and no unset field as null', async () => {
      const tok = await createToken();
      const res = await register(tok.token, { redirect_uris: ['https://app.example.com/cb'], backchannel_logout_uri: 'https://app.example.com/bc', backchannel_logout_session_required: false });
      expect(res.status, res.text).toBe(201);
      expect(res.json).toMatchObject({ backchannel_logout_uri: 'https://app.example.com/bc', backchannel_logout_session_required: true });
      expect(Object.entries(res.json).filter(([, v]) => v === null)).toEqual([]);
      const plain = await register(tok.token, { redirect_uris: ['https://app.example.com/cb'] });
      expect(plain.json).not.toHaveProperty('backchannel_logout_session_required');
    });

    it('defaults the scope to include offline_access only with the refresh_token grant', async () => {
      const tok = await createToken();
      const res = await register(tok.token, { redirect_uris: ['https://app.example.com/cb'], grant_types: ['authorization_code', 'refresh_token'] });
      expect(res.status, res.text).toBe(201);
      expect(res.json.scope).toBe('openid profile email offline_access');
    });

    it('refuses a jwks holding private or symmetric keys (400 naming the key), echoes no key material, creates nothing', async () => {
      const tok = await createToken();
      const before = await clientCount();
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const priv = privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
      for (const key of [priv, { kty: 'oct', k: 'c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0' }, { kty: 'foo' }]) {
        const res = await register(tok.token, { redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key] } });
        expect(res.status, res.text).toBe(400);
        expect(res.json.error).toBe('invalid_client_metadata');
        expect(res.json.error_description).toContain('jwks.keys.0');
        expect(res.text).not.toContain(String(priv.d));
      }
      expect(await clientCount()).toBe(before);
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(0);
    });

    it('the Management API refuses the same keys on create and on PATCH, leaving the client as it was', async () => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const keys = [privateKey.export({ format: 'jwk' })];
      const created = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'keys', redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys } } });
      expect(created.status).toBe(422);
      expect(created.json.errors).toEqual([{ field: 'jwks.keys.0', message: expect.stringMatching(/private or secret key material \(d\)/) }]);
      const ok = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'keys', redirect_uris: ['https://app.example.com/cb'] } });
      expect(ok.status).toBe(201);
      const id = encodeURIComponent(ok.json.data.client_id);
      const patched = await api(t, 'PATCH', `/api/v1/clients/${id}`, { token: admin, body: { jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0' }] } } });
      expect(patched.status).toBe(422);
      expect((await api(t, 'GET', `/api/v1/clients/${id}`, { token: admin })).json.data.updated_at).toBe(ok.json.data.updated_at);
    });

    const expectInvalidToken = (res: Awaited<ReturnType<typeof register>>) => {
      expect(res.status, res.text).toBe(401);
      expect(res.json.error).toBe('invalid_token');
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    };
    const webClient = { client_name: 'Web', redirect_uris: ['https://app.example.com/cb'] };

    it('401 invalid_token without a token or with an unknown one', async () => {
      expectInvalidToken(await register(undefined, webClient));
      expectInvalidToken(await register('not-a-registration-token', webClient));
      // A Management access token is not a registration token.
      expectInvalidToken(await register(admin, webClient));
    });

    it('401 invalid_token for an expired token', async () => {
      const tok = await createToken({ expires_in: 300 });
      await expireInDatabase(tok.jti);
      const res = await register(tok.token, webClient);
      expectInvalidToken(res);
      expect(res.json.error_description).toContain('expired');
    });

    it('401 invalid_token for a revoked token', async () => {
      const tok = await createToken();
      expect((await register(tok.token, webClient)).status).toBe(201);
      expect((await api(t, 'DELETE', `${TOKENS}/${tok.jti}`, { token: admin })).status).toBe(204);
      const res = await register(tok.token, webClient);
      expectInvalidToken(res);
      expect(res.json.error_description).toContain('revoked');
    });

    it('401 invalid_token once max_usage_count is reached', async () => {
      const tok = await createToken({ max_usage_count: 2 });
      expect((await register(tok.token, webClient)).status).toBe(201);
      expect((await register(tok.token, webClient)).status).toBe(201);
      const res = await register(tok.token, webClient);
      expectInvalidToken(res);
      expect(res.json.error_description).toContain('max_usage_count');
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(2);
    });

    it('gives the use back when creating the client fails after the use was counted', async () => {
      const tok = await createToken({ max_usage_count: 1 });
      const clients = t.app.ctx.storage.clients;
      const original = clients.create;
      clients.create = async () => {
        throw new Error('disk full (injected)');
      };
      let failed;
      try {
        failed = await register(tok.token, webClient);
      } finally {
        clients.create = original;
      }
      expect(failed.status).toBe(500);
      expect(failed.json.error).toBe('server_error');
      expect(failed.text).not.toContain('disk full');
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(0);
      // The single use is still there for a registration that succeeds.
      expect((await register(tok.token, webClient)).status).toBe(201);
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(1);
    });

    it('10 concurrent registrations on a single-use token create exactly one client', async () => {
      const tok = await createToken({ max_usage_count: 1 });
      const before = await clientCount();
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => register(tok.token, { client_name: `Racer ${i}`, redirect_uris: ['https://race.example.com/cb'] })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, ...Array(9).fill(401)]);
      for (const r of results.filter((x) => x.status === 401)) expect(r.json.error).toBe('invalid_token');
      expect(await clientCount()).toBe(before + 1);
      expect((await getToken(tok.jti)).json.data.current_usage_count).toBe(1);
    });
  });
});
