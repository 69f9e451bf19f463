/**
 * The shape of `features.social_login` (CONTRACT.md "End-user surface"), shared by the global
 * configuration (config file) and the tenant override section (tenancy/config/sections.ts): one
 * schema, so a setting accepted in one place is accepted, and acts, in the other.
 *
 * Only the shape is checked here (types, lengths, names). What a provider needs once the global
 * settings and a tenant's override are merged (a client_id, an issuer for `type: "oidc"`, Apple's
 * key id and team id) is checked when the merged provider is built (src/social/providers.ts), and
 * on the tenant override section itself when it enables a provider.
 */
import { z } from 'zod';

/** Names of the built-in presets (src/social/presets.ts). */
export const SOCIAL_PRESETS = ['google', 'microsoft', 'apple', 'gitlab', 'github', 'facebook'] as const;
export type SocialPreset = (typeof SOCIAL_PRESETS)[number];
export const isSocialPreset = (name: string): name is SocialPreset => (SOCIAL_PRESETS as readonly string[]).includes(name);

/** A provider name is a path segment of the callback URL: lower-case, short, no dots or slashes. */
export const PROVIDER_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/** User fields an upstream claim may be mapped to (the user's profile claims). */
export const MAPPABLE_FIELDS = ['email', 'given_name', 'family_name', 'name', 'nickname', 'username'] as const;

const httpsOrHttpUrl = z.url({ protocol: /^https?$/ }).max(2048);
const claimName = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be a claim name');
const scopeToken = z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/, 'must be a scope token');

export const socialProviderSchema = z
  .strictObject({
    enabled: z.boolean().optional(),
    /** Only `oidc` (OpenID Connect with discovery); presets imply their own protocol. */
    type: z.literal('oidc').optional(),
    client_id: z.string().trim().min(1).max(512).optional(),
    /** Sealed at rest in a tenant override, never returned. Apple: the PKCS #8 private key (.p8). */
    client_secret: z.string().min(1).max(8192).optional(),
    /** Discovery issuer: required for `type: "oidc"`; overrides the preset's (self-managed GitLab). */
    issuer: httpsOrHttpUrl.optional(),
    display_name: z.string().trim().min(1).max(64).optional(),
    scopes: z.array(scopeToken).min(1).max(30).optional(),
    /** User field -> upstream claim (e.g. `{ "username": "preferred_username" }`). */
    attribute_mapping: z.partialRecord(z.enum(MAPPABLE_FIELDS), claimName).optional(),
    /** Microsoft: `common`, `organizations`, `consumers` or a directory (tenant) id / domain. */
    tenant: z.string().regex(/^[A-Za-z0-9.-]{1,100}$/, 'must be common, organizations, consumers or a directory id').optional(),
    /** Apple: the team id and the key id of the private key in client_secret. */
    team_id: z.string().regex(/^[A-Z0-9]{10}$/, 'must be the 10-character Apple team id').optional(),
    key_id: z.string().regex(/^[A-Z0-9]{10}$/, 'must be the 10-character Apple key id').optional(),
    /** `type: "oidc"`: how the upstream returns the code (Apple always uses form_post). */
    response_mode: z.enum(['query', 'form_post']).optional(),
    /** GitHub / Facebook: other API endpoints (GitHub Enterprise Server, a pinned Graph API version). */
    endpoints: z
      .strictObject({ authorization: httpsOrHttpUrl.optional(), token: httpsOrHttpUrl.optional(), user: httpsOrHttpUrl.optional(), emails: httpsOrHttpUrl.optional() })
      .optional(),
  });

export type SocialProviderSettings = z.output<typeof socialProviderSchema>;

/** Names are checked one by one so the error names the bad key. */
export const socialProvidersSchema = z.record(z.string().regex(PROVIDER_NAME, 'provider names are lower-case letters, digits and -'), socialProviderSchema);

/** The checks that only make sense on one complete provider definition (path relative to it). */
export function socialProviderProblems(name: string, p: SocialProviderSettings): Array<{ path: string[]; message: string }> {
  const out: Array<{ path: string[]; message: string }> = [];
  const preset = isSocialPreset(name);
  if (!preset && p.type !== 'oidc') out.push({ path: ['type'], message: `"${name}" is not a preset (${SOCIAL_PRESETS.join(', ')}): set type "oidc" and an issuer` });
  if (preset && p.type !== undefined && !['google', 'microsoft', 'apple', 'gitlab'].includes(name)) out.push({ path: ['type'], message: `${name} is an OAuth 2.0 preset, not OpenID Connect` });
  if (p.endpoints && name !== 'github' && name !== 'facebook') out.push({ path: ['endpoints'], message: 'only the github and facebook presets take endpoints' });
  if (p.tenant !== undefined && name !== 'microsoft') out.push({ path: ['tenant'], message: 'only the microsoft preset takes a tenant' });
  if ((p.team_id !== undefined || p.key_id !== undefined) && name !== 'apple') out.push({ path: [p.team_id !== undefined ? 'team_id' : 'key_id'], message: 'only the apple preset takes team_id and key_id' });
  if (p.response_mode !== undefined && preset) out.push({ path: ['response_mode'], message: 'presets choose their own response mode' });
  // OpenID Connect Discovery 3: an issuer is an https URL without query or fragment.
  if (p.issuer && /[?#]/.test(p.issuer)) out.push({ path: ['issuer'], message: 'an issuer has no query or fragment' });
  if (p.enabled !== true) return out;
  if (!p.client_id) out.push({ path: ['client_id'], message: 'Required when the provider is enabled' });
  if (!p.client_secret) out.push({ path: ['client_secret'], message: 'Required when the provider is enabled' });
  if (!preset && !p.issuer) out.push({ path: ['issuer'], message: 'Required for type "oidc"' });
  if (name === 'apple') {
    if (!p.team_id) out.push({ path: ['team_id'], message: 'Required for apple (the client secret is a JWT signed with your key)' });
    if (!p.key_id) out.push({ path: ['key_id'], message: 'Required for apple' });
  }
  return out;
}

/** The global `features.social_login` (config file; the providers map is not settable by env). */
export const socialLoginGlobalSchema = z
  .object({
    /** Multi-tenant mode: the `_ops` tenant's callback receives every tenant's upstream callbacks. */
    relay: z.boolean().default(false),
    /** Longest wait for one upstream request (discovery, JWKS, token, user info). */
    upstream_timeout_ms: z.number().int().min(100).max(60_000).default(10_000),
    providers: socialProvidersSchema.default({}),
  })
  .superRefine((v, ctx) => {
    for (const [name, p] of Object.entries(v.providers)) {
      for (const problem of socialProviderProblems(name, p)) ctx.addIssue({ code: 'custom', path: ['providers', name, ...problem.path], message: problem.message });
    }
  });

/**
 * Every URL a provider definition makes the service fetch (issuer, GitHub/Facebook endpoints) with
 * what `problemOf` (the outbound rule, src/outbound) finds wrong with it, paths relative to the
 * providers map: checked when the setting is saved, as client URLs are, and again at every fetch.
 */
export function socialUrlProblems(providers: Record<string, SocialProviderSettings>, problemOf: (url: string) => string | undefined): Array<{ path: string[]; message: string }> {
  const out: Array<{ path: string[]; message: string }> = [];
  for (const [name, p] of Object.entries(providers)) {
    const urls: Array<[string[], string | undefined]> = [[['issuer'], p.issuer], ...Object.entries(p.endpoints ?? {}).map(([k, v]): [string[], string | undefined] => [['endpoints', k], v])];
    for (const [path, url] of urls) {
      const problem = url ? problemOf(url) : undefined;
      if (problem) out.push({ path: [name, ...path], message: problem });
    }
  }
  return out;
}

/**
 * Whether a tenant's override names a server the platform's own definition of the provider does
 * not: an `issuer` or an endpoint other than the platform's value. The client secret goes to that
 * server (the token request), so a platform secret must not follow it there.
 */
export function redirectsElsewhere(platform: SocialProviderSettings | undefined, own: SocialProviderSettings): boolean {
  if (own.issuer !== undefined && own.issuer !== platform?.issuer) return true;
  const endpoints = Object.entries(own.endpoints ?? {}) as Array<[keyof NonNullable<SocialProviderSettings['endpoints']>, string | undefined]>;
  return endpoints.some(([key, url]) => url !== undefined && url !== platform?.endpoints?.[key]);
}
