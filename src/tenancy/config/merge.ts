/**
 * A tenant's effective configuration: the global configuration with the tenant's overrides merged
 * over it, tenant values winning (spec 1.5 rule 1) within the platform's floors and ceilings
 * (policy.ts). Pure: the tenant state is built with it (config/store.ts) whenever the overrides change.
 *
 * Overrides that correspond to a global setting replace it in place, so the code that reads the
 * setting (token lifetimes, rate limits, sessions) needs no tenant awareness:
 *   oidc.ttl.*                        -> oidc.ttl.*
 *   security.sessions.ttl_seconds     -> oidc.ttl.session
 *   security.rate_limit.*             -> security.rate_limit.*
 *   security.password_policy.*        -> security.password_policy.*
 *   security.mfa.required             -> security.mfa.required
 *   security.mfa.{totp,webauthn}_enabled -> security.mfa.{totp,webauthn}_enabled
 * Every section, including those without a global counterpart (branding, integrations...), is
 * also available as set under `overrides` (sensitive fields still sealed).
 */
import type { Config } from '../../config/index.js';
import { PRODUCT_LOCALES } from '../../config/locales.js';
import { clamp } from './policy.js';
import type { TenantOverrides } from './sections.js';

export interface EffectiveConfig extends Config {
  /** The tenant's overrides after clamping; {} for a tenant with none. */
  readonly overrides: TenantOverrides;
}

/** The object without its undefined-valued keys, so a spread never overwrites a global value with undefined. */
function defined<T extends object>(obj: T | undefined): Partial<T> {
  if (!obj) return {};
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function mergeConfig(global: Config, tenantOverrides: TenantOverrides): EffectiveConfig {
  const o = clamp(tenantOverrides, global);
  const security = o.security ?? {};
  return {
    ...global,
    oidc: {
      ...global.oidc,
      ...defined({ id_token_claims: o.oidc?.id_token_claims }),
      ttl: { ...global.oidc.ttl, ...defined(o.oidc?.ttl), ...defined({ session: security.sessions?.ttl_seconds }) },
    },
    security: {
      ...global.security,
      rate_limit: { ...global.security.rate_limit, ...defined(security.rate_limit) },
      password_policy: { ...global.security.password_policy, ...defined(security.password_policy) },
      mfa: {
        ...global.security.mfa,
        ...defined({ required: security.mfa?.required, totp_enabled: security.mfa?.totp_enabled, webauthn_enabled: security.mfa?.webauthn_enabled }),
      },
    },
    overrides: o,
  };
}

/** Discovery metadata the tenant adds (OpenID Connect Discovery 1.0: service_documentation, op_policy_uri, op_tos_uri, ui_locales_supported). */
export function discoveryMetadata(config: EffectiveConfig): Record<string, string | string[]> {
  const d = config.overrides.oidc?.discovery;
  return defined({
    service_documentation: d?.service_documentation,
    // The organisation's own policy and terms pages (integrations.urls) unless discovery names others.
    op_policy_uri: d?.op_policy_uri ?? config.overrides.integrations?.urls?.privacy_policy,
    op_tos_uri: d?.op_tos_uri ?? config.overrides.integrations?.urls?.terms,
    // The languages the pages are served in (as actor.ts uiSettings offers them): the tenant's
    // list, or the global one, else every language the product has.
    ui_locales_supported: config.overrides.application?.available_locales ?? (config.application.available_locales.length ? [...config.application.available_locales] : [...PRODUCT_LOCALES]),
  }) as Record<string, string | string[]>;
}
