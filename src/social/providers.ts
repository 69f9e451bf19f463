/**
 * A tenant's social providers as the sign-in flow uses them: the global `features.social_login`
 * with the tenant's override merged over it field by field (a tenant may replace credentials,
 * disable a global provider or add its own), the tenant's sealed client secret opened, the preset
 * filled in. A provider that is enabled but incomplete after the merge is left out (and logged),
 * so a half-configured provider never shows a button that can only fail.
 */
import { isSocialPreset, redirectsElsewhere, socialProviderProblems, type SocialProviderSettings } from '../config/social.js';
import type { Sealer } from '../keys/sealer.js';
import type { Logger } from '../log.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';
import { revealSecret } from '../tenancy/config/secrets.js';
import { PRESETS, type OAuth2Endpoints, type UpstreamKind } from './presets.js';

export interface SocialProvider {
  /** The configured name: the callback path segment and users' `auth_provider`. */
  name: string;
  kind: UpstreamKind;
  /** Metric label: the preset name, or `oidc` for any other (bounded label values). */
  label: string;
  displayName: string;
  clientId: string;
  /** Apple: the PKCS #8 private key that signs the client-secret JWT. */
  clientSecret: string;
  /** OIDC: the discovery issuer. */
  issuer?: string;
  /** Microsoft multi-tenant endpoints: the ID token's issuer is the discovery template with its `tid`. */
  tidIssuer: boolean;
  endpoints?: OAuth2Endpoints;
  scopes: string[];
  responseMode: 'query' | 'form_post';
  /** User field -> upstream claim. */
  mapping: Record<string, string>;
  apple?: { teamId: string; keyId: string };
}

export interface SocialSettings {
  relay: boolean;
  timeoutMs: number;
  providers: SocialProvider[];
}

const MS_MULTI = new Set(['common', 'organizations', 'consumers']);

function defined<T extends object>(obj: T | undefined): Partial<T> {
  return obj ? (Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>) : {};
}

function build(name: string, s: SocialProviderSettings): SocialProvider {
  const preset = isSocialPreset(name) ? PRESETS[name] : undefined;
  const kind: UpstreamKind = preset?.kind ?? 'oidc';
  const issuer = s.issuer ?? preset?.issuer?.(s.tenant);
  return {
    name,
    kind,
    label: preset ? name : 'oidc',
    displayName: s.display_name ?? preset?.displayName ?? name,
    clientId: s.client_id!,
    clientSecret: s.client_secret!,
    ...(kind === 'oidc' ? { issuer } : {}),
    tidIssuer: name === 'microsoft' && !s.issuer && MS_MULTI.has(s.tenant ?? 'common'),
    ...(preset?.endpoints ? { endpoints: { ...preset.endpoints, ...defined(s.endpoints) } } : {}),
    scopes: s.scopes ?? preset?.scopes ?? ['openid', 'email', 'profile'],
    responseMode: name === 'apple' ? 'form_post' : (s.response_mode ?? 'query'),
    mapping: { ...(preset?.mapping ?? { email: 'email', given_name: 'given_name', family_name: 'family_name', name: 'name', nickname: 'nickname' }), ...defined(s.attribute_mapping) },
    ...(name === 'apple' && s.team_id && s.key_id ? { apple: { teamId: s.team_id, keyId: s.key_id } } : {}),
  };
}

/** Every enabled, complete provider of the tenant, in configuration order (global first). */
export function socialSettings(config: EffectiveConfig, tenant: string, sealer: Sealer, log?: Logger): SocialSettings {
  const global = config.features.social_login;
  const override = config.overrides.features?.social_login;
  const names = [...new Set([...Object.keys(global.providers), ...Object.keys(override?.providers ?? {})])];
  const providers: SocialProvider[] = [];
  for (const name of names) {
    const own = override?.providers?.[name];
    const platform = global.providers[name];
    const merged: SocialProviderSettings = { ...defined(platform), ...defined(own) };
    // A tenant that sends the flow to a server of its choice uses its own secret only (never the
    // platform's client secret or Apple key on another server), as for SMTP (mail/settings.ts).
    if (own?.client_secret === undefined && own && redirectsElsewhere(platform, own)) delete merged.client_secret;
    if (own?.client_secret !== undefined) {
      try {
        merged.client_secret = revealSecret(sealer, tenant, 'features', ['social_login', 'providers', name, 'client_secret'], own.client_secret);
      } catch {
        log?.error({ tenant, provider: name }, 'social provider secret cannot be opened (sealed for another tenant or key): provider left out');
        continue;
      }
    }
    if (merged.enabled !== true) continue;
    const problems = socialProviderProblems(name, merged);
    if (problems.length) {
      log?.warn({ tenant, provider: name, problems: problems.map((p) => `${p.path.join('.')}: ${p.message}`) }, 'social provider enabled but incomplete: left out');
      continue;
    }
    providers.push(build(name, merged));
  }
  return { relay: override?.relay ?? global.relay, timeoutMs: global.upstream_timeout_ms, providers };
}
