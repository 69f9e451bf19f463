/**
 * The callback URL each social provider of a tenant must have registered upstream (CONTRACT.md
 * "End-user surface"), for the administration console and the Management API: the six presets
 * always (so an administrator can register the URL before the credentials exist) and every other
 * provider named in the global or the tenant configuration. `enabled` says whether the provider
 * is offered on the sign-in page now (enabled, complete after the merge, its secret readable).
 * The URL is `{issuer}/social/<name>/callback`, or `_ops`'s when the relay is on (multi-tenant
 * mode only: the caller passes `_ops`'s issuer then). No secret or client id leaves here.
 */
import { SOCIAL_PRESETS, isSocialPreset } from '../config/social.js';
import type { Sealer } from '../keys/sealer.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';
import { PRESETS } from './presets.js';
import { socialSettings } from './providers.js';

export interface ProviderCallback {
  name: string;
  display_name: string;
  /** The preset the provider is built on; null for a generic OpenID Connect provider. */
  preset: string | null;
  enabled: boolean;
  callback_url: string;
}

export interface SocialCallbacks {
  /** Callbacks go through `_ops` (multi-tenant mode with `features.social_login.relay`). */
  relay: boolean;
  providers: ProviderCallback[];
}

export function socialCallbacks(config: EffectiveConfig, tenant: string, sealer: Sealer, o: { issuer: string; opsIssuer?: string }): SocialCallbacks {
  const settings = socialSettings(config, tenant, sealer);
  const relay = settings.relay && o.opsIssuer !== undefined;
  const base = relay ? o.opsIssuer! : o.issuer;
  const configured = [...Object.keys(config.features.social_login.providers), ...Object.keys(config.overrides.features?.social_login?.providers ?? {})];
  const names = [...new Set([...SOCIAL_PRESETS, ...configured])];
  const displayOf = (name: string) =>
    config.overrides.features?.social_login?.providers?.[name]?.display_name ?? config.features.social_login.providers[name]?.display_name ?? (isSocialPreset(name) ? PRESETS[name].displayName : name);
  return {
    relay,
    providers: names.map((name) => ({
      name,
      display_name: displayOf(name),
      preset: isSocialPreset(name) ? name : null,
      enabled: settings.providers.some((p) => p.name === name),
      callback_url: `${base}/social/${name}/callback`,
    })),
  };
}
