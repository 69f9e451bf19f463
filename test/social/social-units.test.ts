/**
 * The parts of social login that need no upstream: provider resolution (global + tenant override,
 * sealed secret, presets), the sealed flow state, Microsoft's tid-aware issuer rule and Apple's
 * client-secret JWT.
 */
import { generateKeyPairSync } from 'node:crypto';
import { decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Sealer } from '../../src/keys/sealer.js';
import { socialSettings, type SocialProvider } from '../../src/social/providers.js';
import { StateCodec } from '../../src/social/state.js';
import { jsonObject } from '../../src/social/http.js';
import { UpstreamError, appleClientSecret, idTokenIssuer } from '../../src/social/upstream.js';
import { mergeConfig } from '../../src/tenancy/config/merge.js';
import { sealSection } from '../../src/tenancy/config/secrets.js';
import type { TenantOverrides } from '../../src/tenancy/config/sections.js';

const sealer = new Sealer(Buffer.alloc(32, 3));

function configWith(providers: Record<string, unknown>, overrides: TenantOverrides = {}) {
  const base = loadConfig({ NODE_ENV: 'test', STORAGE_SQLITE_PATH: ':memory:' });
  const global = { ...base, features: { ...base.features, social_login: { relay: false, upstream_timeout_ms: 10000, providers: providers as never } } };
  return mergeConfig(global, overrides);
}

describe('provider resolution', () => {
  it('fills presets, keeps configuration order, and leaves disabled providers out', () => {
    const s = socialSettings(
      configWith({
        google: { enabled: true, client_id: 'g', client_secret: 'gs' },
        microsoft: { enabled: true, client_id: 'm', client_secret: 'ms' },
        github: { enabled: false, client_id: 'h', client_secret: 'hs' },
        corp: { type: 'oidc', enabled: true, issuer: 'https://sso.corp.example', client_id: 'c', client_secret: 'cs', display_name: 'Corp', attribute_mapping: { username: 'upn' } },
      }),
      'default',
      sealer,
    );
    expect(s.providers.map((p) => [p.name, p.kind, p.label, p.displayName])).toEqual([
      ['google', 'oidc', 'google', 'Google'],
      ['microsoft', 'oidc', 'microsoft', 'Microsoft'],
      ['corp', 'oidc', 'oidc', 'Corp'],
    ]);
    const ms = s.providers.find((p) => p.name === 'microsoft')!;
    expect(ms.issuer).toBe('https://login.microsoftonline.com/common/v2.0');
    expect(ms.tidIssuer).toBe(true);
    expect(s.providers.find((p) => p.name === 'corp')!.mapping.username).toBe('upn');
  });

  it('merges a tenant override field by field, opening its sealed secret; a single-directory Microsoft tenant is not tid-templated', () => {
    const sealed = sealSection(sealer, 'acme', 'features', { social_login: { providers: { github: { enabled: true, client_id: 'acme-gh', client_secret: 'acme-secret' }, microsoft: { enabled: true, client_id: 'm2', client_secret: 'x', tenant: 'contoso.onmicrosoft.com' } } } }, undefined);
    const s = socialSettings(configWith({ github: { enabled: false, client_id: 'global', client_secret: 'global-secret' } }, { features: sealed.data as TenantOverrides['features'] }), 'acme', sealer);
    const gh = s.providers.find((p) => p.name === 'github')!;
    expect(gh).toMatchObject({ clientId: 'acme-gh', clientSecret: 'acme-secret', kind: 'github' });
    expect(gh.endpoints!.emails).toBe('https://api.github.com/user/emails');
    const ms = s.providers.find((p) => p.name === 'microsoft')!;
    expect(ms).toMatchObject({ issuer: 'https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0', tidIssuer: false });
    // Sealed for another tenant: the provider is left out rather than used with garbage.
    expect(socialSettings(configWith({}, { features: sealed.data as TenantOverrides['features'] }), 'globex', sealer).providers).toEqual([]);
  });

  it('uses form_post for Apple and leaves an enabled but incomplete provider out', () => {
    const s = socialSettings(configWith({ apple: { enabled: false, client_id: 'a', client_secret: 'k', team_id: 'ABCDE12345', key_id: 'KEY1234567' } }, { features: { social_login: { providers: { apple: { enabled: true } } } } }), 'default', sealer);
    expect(s.providers.map((p) => [p.name, p.responseMode, p.apple])).toEqual([['apple', 'form_post', { teamId: 'ABCDE12345', keyId: 'KEY1234567' }]]);
    expect(socialSettings(configWith({}, { features: { social_login: { providers: { corp: { type: 'oidc', enabled: true, client_id: 'x', client_secret: 'y' } } } } }), 'default', sealer).providers).toEqual([]);
  });

  it("never gives the platform's secret to a server the tenant's override names (issuer, endpoints)", () => {
    const platform = {
      github: { enabled: true, client_id: 'h', client_secret: 'platform-gh', endpoints: { token: 'https://ghe.example/login/oauth/access_token' } },
      apple: { enabled: true, client_id: 'a', client_secret: 'platform-p8', team_id: 'ABCDE12345', key_id: 'KEY1234567' },
      gitlab: { enabled: true, client_id: 'g', client_secret: 'platform-gl', issuer: 'https://gitlab.example' },
    };
    const moved = { github: { endpoints: { token: 'https://thief.example/token' } }, apple: { issuer: 'https://thief.example' }, gitlab: { issuer: 'https://thief.example' } };
    expect(socialSettings(configWith(platform, { features: { social_login: { providers: moved } } }), 'acme', sealer).providers).toEqual([]);
    // Naming the platform's own servers again, or changing anything else, keeps its secret.
    const kept = { github: { endpoints: { token: 'https://ghe.example/login/oauth/access_token' } }, apple: { display_name: 'Apple ID' }, gitlab: { issuer: 'https://gitlab.example', scopes: ['openid'] } };
    const s = socialSettings(configWith(platform, { features: { social_login: { providers: kept } } }), 'acme', sealer);
    expect(s.providers.map((p) => [p.name, p.clientSecret])).toEqual([['github', 'platform-gh'], ['apple', 'platform-p8'], ['gitlab', 'platform-gl']]);
  });
});

describe('flow state', () => {
  const acme = new StateCodec(sealer, 'acme');
  it('round-trips, and is refused when tampered, of another tenant, another provider or expired', () => {
    const { state, flow } = acme.create('google', 'uid-1', 1_000_000);
    expect(acme.read(state, 'google', 1_000_000)).toEqual(flow);
    expect(state).not.toContain(flow.verifier);
    // A character inside the ciphertext, not its last: the last base64url characters can differ in
    // padding bits only and decode to the same bytes (a flake CI met once).
    const at = state.length - 10;
    const tampered = state.slice(0, at) + (state[at] === 'A' ? 'B' : 'A') + state.slice(at + 1);
    expect(acme.read(tampered, 'google', 1_000_000)).toBe('invalid');
    expect(new StateCodec(sealer, 'globex').read(state, 'google', 1_000_000)).toBe('invalid');
    expect(acme.read(state, 'github', 1_000_000)).toBe('wrong_provider');
    expect(acme.read(state, 'google', 1_000_000 + 901_000)).toBe('expired');
  });
  it('binds to the browser with a MAC of the jti', () => {
    const { flow } = acme.create('google', 'uid-1');
    expect(acme.bindingValid(flow.jti, acme.binding(flow.jti))).toBe(true);
    expect(acme.bindingValid(flow.jti, new StateCodec(sealer, 'globex').binding(flow.jti))).toBe(false);
    expect(acme.bindingValid(flow.jti, undefined)).toBe(false);
  });
});

describe("Microsoft's multi-tenant issuer", () => {
  const template = { issuer: 'https://login.microsoftonline.com/{tenantid}/v2.0' };
  const tid = '72f988bf-86f1-41af-91ab-2d7cd011db47';
  it("fills the template with the token's own tid, and only for the multi-tenant endpoints", () => {
    expect(idTokenIssuer({ tidIssuer: true }, template, { tid })).toBe(`https://login.microsoftonline.com/${tid}/v2.0`);
    expect(idTokenIssuer({ tidIssuer: false }, template, { tid })).toBe(template.issuer);
    expect(idTokenIssuer({ tidIssuer: true }, { issuer: 'https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0' }, { tid })).toBe('https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0');
  });
  it('refuses a missing or malformed tid (no attacker-chosen issuer path)', () => {
    expect(() => idTokenIssuer({ tidIssuer: true }, template, {})).toThrow(UpstreamError);
    expect(() => idTokenIssuer({ tidIssuer: true }, template, { tid: 'evil.example/x' })).toThrow(UpstreamError);
  });
});

describe("Apple's client secret", () => {
  it('is an ES256 JWT of the team for the client, audience Apple, short-lived, with the key id', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const p = { name: 'apple', clientId: 'com.example.web', clientSecret: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), apple: { teamId: 'ABCDE12345', keyId: 'KEY1234567' } } as SocialProvider;
    const now = Math.floor(Date.now() / 1000);
    const jwt = await appleClientSecret(p, now);
    expect(decodeProtectedHeader(jwt)).toEqual({ alg: 'ES256', kid: 'KEY1234567' });
    const { payload } = await jwtVerify(jwt, await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }).toString(), 'ES256'), { issuer: 'ABCDE12345', subject: 'com.example.web', audience: 'https://appleid.apple.com' });
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
    await expect(appleClientSecret({ ...p, clientSecret: 'not a key' }, now)).rejects.toThrow(UpstreamError);
  });
});

describe('upstream error answers', () => {
  const answer = (status: number, body: unknown) => ({ status, body: Buffer.from(JSON.stringify(body)), header: () => null });
  it("names OAuth's string error and the Graph API's error object (type, code, subcode) in the log reason", () => {
    expect(() => jsonObject(answer(400, { error: 'invalid_grant' }), 'token')).toThrow('token: HTTP 400 (invalid_grant)');
    expect(() => jsonObject(answer(400, { error: { message: 'This authorization code has been used.', type: 'OAuthException', code: 100, error_subcode: 36009, fbtrace_id: 'x' } }), 'token')).toThrow('token: HTTP 400 (OAuthException 100 36009)');
    expect(() => jsonObject(answer(200, [1]), 'user')).toThrow(UpstreamError);
  });
});
