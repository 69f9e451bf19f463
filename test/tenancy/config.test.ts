/**
 * Tenant configuration overrides as pure functions: section schemas, platform floors and ceilings
 * (with the field names the API reports), the merge over the global configuration, and the
 * sealing and masking of secrets.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Sealer } from '../../src/keys/sealer.js';
import { zodFieldErrors } from '../../src/http/zod-errors.js';
import { discoveryMetadata, mergeConfig } from '../../src/tenancy/config/merge.js';
import { RULES, UNSUPPORTED_FIELDS, clamp, violations } from '../../src/tenancy/config/policy.js';
import { MASK, maskSections, revealSecret, sealSection, sensitivePaths } from '../../src/tenancy/config/secrets.js';
import { SECTION_NAMES, SECTION_SCHEMAS, SENSITIVE_FIELDS, isSectionName, type SectionName } from '../../src/tenancy/config/sections.js';

const global = loadConfig({});
const strict = loadConfig({ SECURITY_MFA_REQUIRED: 'true', SECURITY_PASSWORD_POLICY_MIN_LENGTH: '12', SECURITY_PASSWORD_POLICY_REQUIRE_DIGIT: 'true', SECURITY_RATE_LIMIT_WRITE: '50' });
const sealer = new Sealer(Buffer.alloc(32, 3));

/** Field errors of a section body: schema first, then policy (as the PUT handler does). */
function errorsOf(section: SectionName, body: unknown, g = global) {
  const parsed = SECTION_SCHEMAS[section].safeParse(body);
  if (!parsed.success) return zodFieldErrors(parsed.error, 'body', body);
  return violations(section, parsed.data as Record<string, unknown>, g);
}
const fields = (section: SectionName, body: unknown, g = global) => errorsOf(section, body, g).map((e) => e.field);

describe('section schemas', () => {
  it('are exactly the seven sections of spec 1.5', () => {
    expect(SECTION_NAMES).toEqual(['application', 'branding', 'security', 'features', 'oidc', 'integrations', 'notifications']);
    expect(isSectionName('branding')).toBe(true);
    expect(isSectionName('toString')).toBe(false);
    expect(isSectionName('Branding')).toBe(false);
  });

  it('accept a full, snake_case section of each kind', () => {
    const valid: Record<SectionName, unknown> = {
      application: { title: 'Acme', default_locale: 'en', available_locales: ['en', 'fr-CA'] },
      branding: {
        company_name: 'Acme Inc.',
        logo_light_url: 'https://cdn.acme.test/logo.svg',
        logo_dark_url: 'https://cdn.acme.test/logo-dark.svg',
        favicon_url: 'https://cdn.acme.test/favicon.ico',
        font_family: '"Inter", sans-serif',
        palette_light: { primary: '#1a73e8', background: '#fff' },
        palette_dark: { primary: '#8ab4f8', background: '#202124' },
      },
      security: {
        password_policy: { min_length: 12, require_uppercase: true, require_lowercase: true, require_digit: true, require_symbol: false },
        mfa: { required: true, totp_enabled: true, webauthn_enabled: false },
        sessions: { ttl_seconds: 3600 },
        signup: { enabled: false, allowed_email_domains: ['acme.test'] },
        rate_limit: { read: 100, write: 20, delete: 10, sensitive: 5 },
        device_matching: { enabled: true, trusted_device_days: 30, notify_new_device: true },
      },
      features: { social_login: { providers: { google: { enabled: true, client_id: 'g-id', client_secret: 'g-secret' }, github: { enabled: false } } } },
      oidc: {
        discovery: { service_documentation: 'https://docs.acme.test', op_policy_uri: 'https://acme.test/privacy', op_tos_uri: 'https://acme.test/terms' },
        ttl: { access_token: 600, id_token: 600, refresh_token: 86400, authorization_code: 30, device_code: 300 },
      },
      integrations: {
        smtp: { host: 'smtp.acme.test', port: 587, username: 'mailer', password: 'p4ss', from: 'no-reply@acme.test', secure: false },
      },
      notifications: { security_alerts: { new_device_login: true, password_changed: true } },
    };
    for (const section of SECTION_NAMES) expect(errorsOf(section, valid[section]), section).toEqual([]);
    expect(errorsOf('oidc', {})).toEqual([]);
  });

  it('refuse unknown fields at any depth, naming them', () => {
    expect(errorsOf('branding', { company_name: 'A', companyName: 'B' })).toEqual([{ field: 'companyName', message: 'Unknown field' }]);
    expect(fields('oidc', { ttl: { access_token: 60, acess_token: 60 } })).toEqual(['ttl.acess_token']);
    // A name that is not a preset must say it is a generic OpenID Connect provider (issue 15).
    expect(fields('features', { social_login: { providers: { myspace: { enabled: false } } } })).toEqual(['social_login.providers.myspace.type']);
    expect(fields('features', { social_login: { providers: { google: { enabled: false, clientid: 'x' } } } })).toEqual(['social_login.providers.google.clientid']);
  });

  it('refuse locales the pages are not written in, naming each', () => {
    expect(fields('application', { default_locale: 'xx' })).toEqual(['default_locale']);
    expect(fields('application', { available_locales: ['en', 'pt-BR', 'yy'] })).toEqual(['available_locales.1', 'available_locales.2']);
    expect(errorsOf('application', { available_locales: ['xx'], default_locale: 'xx' })[0]?.message).toMatch(/en, fr, de, es/);
  });

  it('name fields of the wrong type or format', () => {
    expect(fields('oidc', { ttl: { access_token: '120' } })).toEqual(['ttl.access_token']);
    expect(fields('oidc', { ttl: { access_token: 0 } })).toEqual(['ttl.access_token']);
    expect(fields('branding', { logo_light_url: 'javascript:alert(1)', palette_dark: { primary: 'red' } })).toEqual(['logo_light_url', 'palette_dark.primary']);
    expect(fields('branding', { font_family: 'x;} body{display:none' })).toEqual(['font_family']);
    expect(fields('application', { default_locale: 'fr', available_locales: ['en'] })).toEqual(['default_locale']);
    expect(fields('features', { social_login: { providers: { google: { enabled: true } } } })).toEqual(['social_login.providers.google.client_id', 'social_login.providers.google.client_secret']);
  });
});

describe('floors and ceilings (policy.ts)', () => {
  it('cap token lifetimes: access 86400, refresh 7776000 (CONTRACT.md), the field relative to the section and the setting in the message', () => {
    expect(errorsOf('oidc', { ttl: { access_token: 86400, refresh_token: 7776000 } })).toEqual([]);
    const errors = errorsOf('oidc', { ttl: { access_token: 86401, refresh_token: 7776001, id_token: 86401, authorization_code: 601, device_code: 3601 } });
    expect(errors.map((e) => e.field)).toEqual(['ttl.access_token', 'ttl.id_token', 'ttl.refresh_token', 'ttl.authorization_code', 'ttl.device_code']);
    expect(errors[0]!.message).toBe('must be at most 86400 (oidc.ttl.access_token: platform ceiling)');
    expect(errors[2]!.message).toMatch(/^must be at most 7776000 /);
    expect(fields('security', { sessions: { ttl_seconds: 7776001 } })).toEqual(['sessions.ttl_seconds']);
  });

  it('keep rate limits at or below the global ones', () => {
    expect(errorsOf('security', { rate_limit: { read: 600, write: 1, delete: 60, sensitive: 10 } })).toEqual([]);
    expect(errorsOf('security', { rate_limit: { read: 601, sensitive: 11 } }).map((e) => e.field)).toEqual(['rate_limit.read', 'rate_limit.sensitive']);
    expect(errorsOf('security', { rate_limit: { write: 51 } }, strict)).toEqual([{ field: 'rate_limit.write', message: 'must be at most 50 (security.rate_limit.write: global security.rate_limit.write)' }]);
  });

  it('never let the password policy go below the global one', () => {
    expect(fields('security', { password_policy: { min_length: 7 } })).toEqual(['password_policy.min_length']);
    expect(fields('security', { password_policy: { min_length: 8 } })).toEqual([]);
    expect(fields('security', { password_policy: { min_length: 11 } }, strict)).toEqual(['password_policy.min_length']);
    expect(fields('security', { password_policy: { min_length: 129 } })).toEqual(['password_policy.min_length']);
    expect(fields('security', { password_policy: { require_digit: false } })).toEqual([]);
    expect(fields('security', { password_policy: { require_digit: false, require_symbol: false } }, strict)).toEqual(['password_policy.require_digit']);
  });

  it('refuse to turn MFA off when it is globally required, and allow it otherwise', () => {
    expect(errorsOf('security', { mfa: { required: false } }, strict)).toEqual([{ field: 'mfa.required', message: 'cannot be false (security.mfa.required: global security.mfa.required is true)' }]);
    expect(errorsOf('security', { mfa: { required: true } }, strict)).toEqual([]);
    expect(errorsOf('security', { mfa: { required: false } })).toEqual([]);
  });

  it('refuse to turn every second-factor method off while MFA is required (by the tenant or the platform)', () => {
    const both = { totp_enabled: false, webauthn_enabled: false };
    expect(fields('security', { mfa: both }, strict)).toEqual(['mfa.totp_enabled', 'mfa.webauthn_enabled']);
    expect(fields('security', { mfa: { required: true, ...both } })).toEqual(['mfa.totp_enabled', 'mfa.webauthn_enabled']);
    expect(errorsOf('security', { mfa: { required: true, ...both } })[0]!.message).toMatch(/at least one of mfa.totp_enabled and mfa.webauthn_enabled/);
    expect(fields('security', { mfa: { webauthn_enabled: false } }, strict)).toEqual([]);
    expect(fields('security', { mfa: { totp_enabled: false } }, strict)).toEqual([]);
    expect(fields('security', { mfa: both })).toEqual([]); // MFA not required: turning both off is turning MFA off
    expect(fields('security', { mfa: { required: false, ...both } })).toEqual([]);
  });

  it('refuse a global configuration that requires MFA with every method off', () => {
    expect(() => loadConfig({ SECURITY_MFA_REQUIRED: 'true', SECURITY_MFA_TOTP_ENABLED: 'false', SECURITY_MFA_WEBAUTHN_ENABLED: 'false' })).toThrow(/SECURITY_MFA_REQUIRED.*totp_enabled or webauthn_enabled/s);
    expect(loadConfig({ SECURITY_MFA_REQUIRED: 'true', SECURITY_MFA_TOTP_ENABLED: 'false' }).security.mfa.webauthn_enabled).toBe(true);
  });

  it('refuse every field nothing acts on yet with "not supported yet", naming it (act or refuse)', () => {
    expect(UNSUPPORTED_FIELDS).toEqual(['notifications.email', 'notifications.sms']);
    expect(fields('notifications', { email: { enabled: true } })).toEqual(['email']);
    expect(errorsOf('notifications', { sms: { enabled: true } })).toEqual([
      { field: 'sms', message: 'not supported yet (notifications.sms: nothing acts on it yet)' },
    ]);
    expect(fields('notifications', { sms: { enabled: false } })).toEqual(['sms']);
    // The supported neighbours stay accepted.
    expect(fields('notifications', { security_alerts: { password_changed: false } })).toEqual([]);
    expect(fields('application', { title: 'Acme', available_locales: ['en'] })).toEqual([]);
    // Acted on since: the description on the pages, the organisation's links in their footer and discovery.
    expect(fields('application', { title: 'Acme', description: 'Sign in to Acme' })).toEqual([]);
    expect(fields('integrations', { smtp: { host: 'smtp.acme.test' }, urls: { website: 'https://acme.test' } })).toEqual([]);
  });

  it("refuse a social provider URL the outbound rule refuses, when it is saved (not only when it is fetched)", () => {
    const production = loadConfig({ NODE_ENV: 'production', SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false' });
    const provider = (issuer: string) => ({ social_login: { providers: { corp: { type: 'oidc', enabled: true, client_id: 'c', client_secret: 's', issuer } } } });
    for (const issuer of ['http://127.0.0.1:3442', 'http://169.254.169.254/latest', 'http://[::ffff:7f00:1]', 'http://2130706433', 'http://localhost:3442', 'http://sso.localhost', 'https://user:pw@sso.example.com', 'http://10.0.0.1']) {
      expect(fields('features', provider(issuer), production), issuer).toEqual(['social_login.providers.corp.issuer']);
    }
    expect(fields('features', provider('https://sso.example.com'), production)).toEqual([]);
    expect(fields('features', provider('https://sso.example.com/?q=1'), production)).toEqual(['social_login.providers.corp.issuer']);
    const github = { social_login: { providers: { github: { enabled: true, client_id: 'c', client_secret: 's', endpoints: { user: 'http://169.254.169.254/user' } } } } };
    expect(fields('features', github, production)).toEqual(['social_login.providers.github.endpoints.user']);
    // Loopback stays allowed in development and test (CONTRACT: development conveniences); metadata addresses never.
    expect(fields('features', provider('http://127.0.0.1:3442'))).toEqual([]);
    expect(fields('features', provider('http://169.254.169.254/latest'))).toEqual(['social_login.providers.corp.issuer']);
  });

  it('drops a stored unsupported value at merge, so nothing can read a setting the API now refuses', () => {
    const effective = mergeConfig(global, { application: { title: 'Acme' }, notifications: { sms: { enabled: true }, email: { enabled: false } } });
    expect(effective.overrides.notifications?.email).toBeUndefined();
    expect(effective.overrides.notifications?.sms).toBeUndefined();
  });

  it('has every rule on a field that its section schema defines', () => {
    for (const rule of RULES) {
      const [section, ...path] = rule.path.split('.');
      expect(isSectionName(section!), rule.path).toBe(true);
      let schema: any = SECTION_SCHEMAS[section as SectionName];
      for (const key of path) {
        while (schema.def.innerType || schema.def.in) schema = schema.def.innerType ?? schema.def.in;
        schema = schema.shape[key];
        expect(schema, rule.path).toBeDefined();
      }
    }
  });
});

describe('merge over the global configuration', () => {
  it('is the global configuration when there are no overrides', () => {
    const effective = mergeConfig(global, {});
    const { overrides, ...rest } = effective;
    expect(overrides).toEqual({});
    expect(rest).toEqual(global);
  });

  it('lets tenant values win where they map onto global settings, and leaves the rest', () => {
    const effective = mergeConfig(global, {
      oidc: { ttl: { access_token: 120 } },
      security: { rate_limit: { read: 5 }, sessions: { ttl_seconds: 900 }, mfa: { required: true }, password_policy: { min_length: 14 } },
      branding: { company_name: 'Acme' },
    });
    expect(effective.oidc.ttl).toEqual({ ...global.oidc.ttl, access_token: 120, session: 900 });
    expect(effective.oidc.path).toBe(global.oidc.path);
    expect(effective.security.rate_limit).toEqual({ ...global.security.rate_limit, read: 5 });
    expect(effective.security.mfa.required).toBe(true);
    expect(effective.security.password_policy).toEqual({ ...global.security.password_policy, min_length: 14 });
    expect(effective.security.key_store).toBe(global.security.key_store);
    expect(effective.overrides.branding).toEqual({ company_name: 'Acme' });
  });

  it('is pure: neither input changes', () => {
    const overrides = { oidc: { ttl: { access_token: 999999 } } };
    const before = JSON.stringify(global);
    mergeConfig(global, overrides);
    expect(JSON.stringify(global)).toBe(before);
    expect(overrides).toEqual({ oidc: { ttl: { access_token: 999999 } } });
  });

  it('clamps stored values that no longer comply, so a stale override never weakens a tenant', () => {
    // Saved before the operator required MFA and lowered the write limit.
    const stored = { security: { mfa: { required: false, totp_enabled: true }, rate_limit: { write: 100 }, password_policy: { min_length: 8 } }, oidc: { ttl: { access_token: 10 ** 6 } } };
    const effective = mergeConfig(strict, stored);
    expect(effective.security.mfa.required).toBe(true);
    expect(effective.security.rate_limit.write).toBe(50);
    expect(effective.security.password_policy.min_length).toBe(12);
    expect(effective.oidc.ttl.access_token).toBe(86400);
    expect(effective.overrides.security?.mfa).toEqual({ required: true, totp_enabled: true });
    expect(clamp(stored, strict)).toEqual(effective.overrides);
  });

  it('gives stored method switches back to the platform when they would leave required MFA without a method', () => {
    const stored = { security: { mfa: { totp_enabled: false, webauthn_enabled: false } } };
    expect(mergeConfig(global, stored).security.mfa).toEqual({ required: false, totp_enabled: false, webauthn_enabled: false });
    expect(mergeConfig(strict, stored).security.mfa).toEqual({ required: true, totp_enabled: true, webauthn_enabled: true });
    expect(mergeConfig(strict, { security: { mfa: { totp_enabled: false } } }).security.mfa).toEqual({ required: true, totp_enabled: false, webauthn_enabled: true });
  });

  it('adds the tenant discovery metadata', () => {
    // The pages' languages always: every one the product has, or the global list, or the tenant's.
    expect(discoveryMetadata(mergeConfig(global, {}))).toEqual({ ui_locales_supported: ['en', 'fr', 'de', 'es'] });
    const globalList = loadConfig({ NODE_ENV: 'test', APPLICATION_AVAILABLE_LOCALES: 'en,fr' });
    expect(discoveryMetadata(mergeConfig(globalList, {}))).toEqual({ ui_locales_supported: ['en', 'fr'] });
    const effective = mergeConfig(global, { oidc: { discovery: { op_tos_uri: 'https://acme.test/terms' } }, application: { available_locales: ['en', 'de'] } });
    expect(discoveryMetadata(effective)).toEqual({ op_tos_uri: 'https://acme.test/terms', ui_locales_supported: ['en', 'de'] });
  });
});

describe('secrets', () => {
  const smtp = { smtp: { host: 'smtp.acme.test', password: 'hunter2-smtp' } };
  const social = { social_login: { providers: { google: { enabled: true, client_id: 'g', client_secret: 'g-secret' }, github: { enabled: true, client_id: 'h', client_secret: 'h-secret' } } } };

  it('lists one sensitive field per kind the spec names', () => {
    expect(SENSITIVE_FIELDS).toEqual(['integrations.smtp.password', 'features.social_login.providers.*.client_secret', 'notifications.sms.api_key']);
    expect(sensitivePaths('features', social)).toEqual([
      ['social_login', 'providers', 'google', 'client_secret'],
      ['social_login', 'providers', 'github', 'client_secret'],
    ]);
    expect(sensitivePaths('integrations', { smtp: { host: 'x' } })).toEqual([]);
  });

  it('seals every secret, bound to tenant, section and field', () => {
    const { data, errors } = sealSection(sealer, 'acme', 'integrations', smtp, undefined);
    expect(errors).toEqual([]);
    const sealed = (data.smtp as { password: string }).password;
    expect(sealed).toMatch(/^v1\./);
    expect(JSON.stringify(data)).not.toContain('hunter2');
    expect((data.smtp as { host: string }).host).toBe('smtp.acme.test');
    expect(smtp.smtp.password).toBe('hunter2-smtp'); // input untouched
    expect(revealSecret(sealer, 'acme', 'integrations', ['smtp', 'password'], sealed)).toBe('hunter2-smtp');
    // Copied into another tenant's row, or another field: it does not open.
    expect(() => revealSecret(sealer, 'other', 'integrations', ['smtp', 'password'], sealed)).toThrow();
    expect(() => revealSecret(sealer, 'acme', 'notifications', ['sms', 'api_key'], sealed)).toThrow();
  });

  it('masks every secret on the way out', () => {
    const features = sealSection(sealer, 'acme', 'features', social, undefined).data;
    const integrations = sealSection(sealer, 'acme', 'integrations', smtp, undefined).data;
    const out = maskSections({ features, integrations, branding: { company_name: 'Acme' } });
    expect(out).toEqual({
      features: { social_login: { providers: { google: { enabled: true, client_id: 'g', client_secret: MASK }, github: { enabled: true, client_id: 'h', client_secret: MASK } } } },
      integrations: { smtp: { host: 'smtp.acme.test', password: MASK } },
      branding: { company_name: 'Acme' },
    });
    expect(JSON.stringify(out)).not.toMatch(/v1\.|-secret|hunter2/);
  });

  it('keeps the stored secret when the mask is sent back, and refuses a mask with nothing behind it', () => {
    const stored = sealSection(sealer, 'acme', 'features', social, undefined).data;
    const edited = { social_login: { providers: { google: { enabled: false, client_id: 'g2', client_secret: MASK }, github: { enabled: true, client_id: 'h', client_secret: 'new-h' } } } };
    const { data, errors } = sealSection(sealer, 'acme', 'features', edited, stored);
    expect(errors).toEqual([]);
    const providers = (data as typeof social).social_login.providers;
    expect(providers.google.client_secret).toBe(stored.social_login && (stored as typeof social).social_login.providers.google.client_secret);
    expect(providers.google.client_id).toBe('g2');
    expect(revealSecret(sealer, 'acme', 'features', ['social_login', 'providers', 'github', 'client_secret'], providers.github.client_secret)).toBe('new-h');

    const orphan = sealSection(sealer, 'acme', 'notifications', { sms: { api_key: MASK } }, undefined);
    expect(orphan.errors.map((e) => e.field)).toEqual(['sms.api_key']);
  });
});

describe('oidc.id_token_claims (issue 18 item 2)', () => {
  it('defaults to granted globally, is validated globally and per tenant, and a tenant override wins either way', () => {
    expect(global.oidc.id_token_claims).toBe('granted');
    expect(loadConfig({ OIDC_ID_TOKEN_CLAIMS: 'conform' }).oidc.id_token_claims).toBe('conform');
    expect(() => loadConfig({ OIDC_ID_TOKEN_CLAIMS: 'sometimes' })).toThrow(/OIDC_ID_TOKEN_CLAIMS/);
    expect(errorsOf('oidc', { id_token_claims: 'conform' })).toEqual([]);
    expect(fields('oidc', { id_token_claims: 'sometimes' })).toEqual(['id_token_claims']);
    expect(fields('oidc', { id_token_claims: true })).toEqual(['id_token_claims']);
    expect(mergeConfig(global, { oidc: { id_token_claims: 'conform' } }).oidc.id_token_claims).toBe('conform');
    const conformGlobal = loadConfig({ OIDC_ID_TOKEN_CLAIMS: 'conform' });
    expect(mergeConfig(conformGlobal, {}).oidc.id_token_claims).toBe('conform');
    expect(mergeConfig(conformGlobal, { oidc: { id_token_claims: 'granted' } }).oidc.id_token_claims).toBe('granted');
  });
});
