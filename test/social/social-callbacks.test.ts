/**
 * The callback URL listing behind the console (src/social/callbacks.ts) and the provider marks
 * (src/ui/social-marks.ts), without a server: which providers are listed, which are offered, which
 * host the URL names (the tenant's issuer, or `_ops` only when the relay is on AND the caller is in
 * multi-tenant mode), and that the marks are fixed markup with no style attribute.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Sealer } from '../../src/keys/sealer.js';
import { socialCallbacks } from '../../src/social/callbacks.js';
import { mergeConfig } from '../../src/tenancy/config/merge.js';
import type { TenantOverrides } from '../../src/tenancy/config/sections.js';
import { MARKED_PRESETS, socialMark } from '../../src/ui/social-marks.js';

const sealer = new Sealer(Buffer.alloc(32, 5));
const ISSUER = 'https://acme.id.example/oidc/v1';
const OPS = 'https://_ops.id.example/oidc/v1';

function configWith(providers: Record<string, unknown>, relay: boolean, overrides: TenantOverrides = {}) {
  const base = loadConfig({ NODE_ENV: 'test', STORAGE_SQLITE_PATH: ':memory:' });
  return mergeConfig({ ...base, features: { ...base.features, social_login: { relay, upstream_timeout_ms: 10000, providers: providers as never } } }, overrides);
}

describe('social callback URLs', () => {
  it('lists the six presets and every configured provider (global and tenant), offered only when enabled and complete', () => {
    const config = configWith(
      { github: { enabled: true, client_id: 'g', client_secret: 's' }, corp: { type: 'oidc', enabled: true, issuer: 'https://sso.corp.example', client_id: 'c', client_secret: 'cs', display_name: 'Corp SSO' } },
      false,
      { features: { social_login: { providers: { facebook: { enabled: true, client_id: 'fb' }, extra: { type: 'oidc', enabled: false, issuer: 'https://x.example', display_name: 'Extra' } } } } },
    );
    const out = socialCallbacks(config, 'acme', sealer, { issuer: ISSUER });
    expect(out.relay).toBe(false);
    expect(out.providers.map((p) => [p.name, p.display_name, p.preset, p.enabled])).toEqual([
      ['google', 'Google', 'google', false],
      ['microsoft', 'Microsoft', 'microsoft', false],
      ['apple', 'Apple', 'apple', false],
      ['gitlab', 'GitLab', 'gitlab', false],
      ['github', 'GitHub', 'github', true],
      // Enabled by the tenant but without a secret: not offered (no button that can only fail).
      ['facebook', 'Facebook', 'facebook', false],
      ['corp', 'Corp SSO', null, true],
      ['extra', 'Extra', null, false],
    ]);
    for (const p of out.providers) expect(p.callback_url).toBe(`${ISSUER}/social/${p.name}/callback`);
    expect(JSON.stringify(out)).not.toMatch(/"s"|cs|"fb"/);
  });

  it("names _ops when the relay is on in multi-tenant mode; the tenant's own issuer when single-tenant or when the tenant turns the relay off", () => {
    const providers = { github: { enabled: true, client_id: 'g', client_secret: 's' } };
    const relayed = socialCallbacks(configWith(providers, true), 'acme', sealer, { issuer: ISSUER, opsIssuer: OPS });
    expect(relayed.relay).toBe(true);
    expect(relayed.providers.find((p) => p.name === 'github')!.callback_url).toBe(`${OPS}/social/github/callback`);
    // No _ops issuer given (single-tenant mode): the relay setting cannot apply.
    expect(socialCallbacks(configWith(providers, true), 'acme', sealer, { issuer: ISSUER }).providers[4]!.callback_url).toBe(`${ISSUER}/social/github/callback`);
    const off = socialCallbacks(configWith(providers, true, { features: { social_login: { relay: false } } }), 'acme', sealer, { issuer: ISSUER, opsIssuer: OPS });
    expect(off.relay).toBe(false);
    expect(off.providers.find((p) => p.name === 'github')!.callback_url).toBe(`${ISSUER}/social/github/callback`);
  });
});

describe('provider marks', () => {
  it('has a mark for each of the six presets, none for any other name; hidden, unfocusable, no style attribute or script', () => {
    expect([...MARKED_PRESETS].sort()).toEqual(['apple', 'facebook', 'github', 'gitlab', 'google', 'microsoft']);
    for (const preset of MARKED_PRESETS) {
      const svg = socialMark(preset).value;
      expect(svg).toMatch(/^<svg class="social-mark" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">.+<\/svg>$/);
      expect(svg).not.toMatch(/style=|<script|on[a-z]+=|href=/i);
    }
    expect(socialMark(undefined).value).toBe('');
    expect(socialMark('corp').value).toBe('');
    expect(socialMark('__proto__').value).toBe('');
  });
});
