/**
 * The seven sections a tenant may override (spec 1.5), one zod schema each. Fields are snake_case
 * (CONTRACT.md: `branding.company_name`, `application.title`) and every field is optional: a
 * section holds only what the tenant overrides, the rest comes from the global configuration
 * (merge.ts). Objects are strict, so an unknown or misspelt field is a 422 naming it instead of a
 * setting silently ignored.
 *
 * These schemas check shape only (types, formats, lengths). Limits that depend on the platform —
 * token lifetime ceilings, rate limits, password and MFA floors — live in policy.ts.
 */
import { z } from 'zod';
import { productLocale } from '../../config/locales.js';
import { SOCIAL_PRESETS, socialProviderProblems, socialProvidersSchema } from '../../config/social.js';

const bool = z.boolean();
const seconds = z.number().int().positive();
const text = (max: number) => z.string().trim().min(1).max(max);
const httpUrl = z.url({ protocol: /^https?$/ }).max(2048);
const color = z.string().regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/, 'must be a hex colour such as #1a73e8');
const domain = z.string().toLowerCase().regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a domain name such as example.com');
/** Secrets are sealed before they are stored; 1024 characters covers SMTP passwords, API keys, OAuth secrets. */
const secret = z.string().min(1).max(1024);

export const applicationSection = z
  .strictObject({
    title: text(255).optional(),
    description: z.string().max(1000).optional(),
    default_locale: productLocale.optional(),
    available_locales: z.array(productLocale).min(1).max(50).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.default_locale && v.available_locales && !v.available_locales.includes(v.default_locale)) {
      ctx.addIssue({ code: 'custom', path: ['default_locale'], message: 'must be one of available_locales' });
    }
  });

const palette = z.strictObject({
  primary: color.optional(),
  secondary: color.optional(),
  accent: color.optional(),
  background: color.optional(),
  surface: color.optional(),
  text: color.optional(),
  error: color.optional(),
});

export const brandingSection = z.strictObject({
  company_name: text(255).optional(),
  logo_light_url: httpUrl.optional(),
  logo_dark_url: httpUrl.optional(),
  favicon_url: httpUrl.optional(),
  // Ends up in a stylesheet: a font list only, nothing that could close the declaration.
  font_family: z.string().trim().min(1).max(200).regex(/^[A-Za-z0-9 ,'"-]+$/, 'must be a CSS font list such as "Inter", sans-serif').optional(),
  palette_light: palette.optional(),
  palette_dark: palette.optional(),
});

export const securitySection = z.strictObject({
  password_policy: z
    .strictObject({
      min_length: z.number().int().positive().optional(),
      require_uppercase: bool.optional(),
      require_lowercase: bool.optional(),
      require_digit: bool.optional(),
      require_symbol: bool.optional(),
      check_breached: bool.optional(),
    })
    .optional(),
  mfa: z.strictObject({ required: bool.optional(), totp_enabled: bool.optional(), webauthn_enabled: bool.optional() }).optional(),
  /** Sign-in session lifetime: the tenant's `oidc.ttl.session`. */
  sessions: z.strictObject({ ttl_seconds: seconds.optional() }).optional(),
  signup: z.strictObject({ enabled: bool.optional(), allowed_email_domains: z.array(domain).max(100).optional(), require_email_verification: bool.optional() }).optional(),
  /** Lifetime of the mailed password-reset link (src/ui/account/password-reset.ts). */
  password_reset: z.strictObject({ ttl_seconds: z.number().int().min(300).max(86400).optional() }).optional(),
  rate_limit: z
    .strictObject({ read: z.number().int().positive().optional(), write: z.number().int().positive().optional(), delete: z.number().int().positive().optional(), sensitive: z.number().int().positive().optional() })
    .optional(),
  /** Recognising returning devices: trust a known device for a while, tell the user about new ones. */
  device_matching: z
    .strictObject({ enabled: bool.optional(), trusted_device_days: z.number().int().min(1).max(365).optional(), notify_new_device: bool.optional() })
    .optional(),
});

/** The presets (kept for callers of this name); any other name is a `type: "oidc"` provider. */
export const SOCIAL_PROVIDERS = SOCIAL_PRESETS;

export const featuresSection = z.strictObject({
  // Social login (src/social): the same provider shape as the global config (config/social.ts).
  social_login: z
    .strictObject({
      relay: bool.optional(),
      providers: socialProvidersSchema
        .superRefine((providers, ctx) => {
          for (const [name, p] of Object.entries(providers)) {
            for (const problem of socialProviderProblems(name, p)) ctx.addIssue({ code: 'custom', path: [name, ...problem.path], message: problem.message });
          }
        })
        .optional(),
    })
    .optional(),
});

export const oidcSection = z.strictObject({
  /** The tenant's own choice of `oidc.id_token_claims` (src/config/schema.ts). */
  id_token_claims: z.enum(['granted', 'conform']).optional(),
  /** Extra discovery metadata (OpenID Connect Discovery 1.0, section 3). */
  discovery: z.strictObject({ service_documentation: httpUrl.optional(), op_policy_uri: httpUrl.optional(), op_tos_uri: httpUrl.optional() }).optional(),
  ttl: z
    .strictObject({
      access_token: seconds.optional(),
      id_token: seconds.optional(),
      refresh_token: seconds.optional(),
      authorization_code: seconds.optional(),
      device_code: seconds.optional(),
    })
    .optional(),
});

export const integrationsSection = z.strictObject({
  smtp: z
    .strictObject({
      host: z.string().trim().min(1).max(253).regex(/^[A-Za-z0-9.-]+$/, 'must be a host name').optional(),
      port: z.number().int().min(1).max(65535).optional(),
      username: z.string().min(1).max(255).optional(),
      password: secret.optional(),
      from: z.email().max(255).optional(),
      /** TLS from the first byte (port 465); false means STARTTLS when offered. */
      secure: bool.optional(),
    })
    .optional(),
  urls: z.strictObject({ website: httpUrl.optional(), privacy_policy: httpUrl.optional(), terms: httpUrl.optional() }).optional(),
});

export const notificationsSection = z.strictObject({
  email: z.strictObject({ enabled: bool.optional() }).optional(),
  sms: z
    .strictObject({
      enabled: bool.optional(),
      provider: z.enum(['twilio', 'vonage', 'messagebird', 'aws_sns']).optional(),
      api_key: secret.optional(),
    })
    .optional(),
  /** Which security events users are told about by default. */
  security_alerts: z
    .strictObject({ new_device_login: bool.optional(), password_changed: bool.optional(), mfa_changed: bool.optional(), account_locked: bool.optional() })
    .optional(),
});

export const SECTION_SCHEMAS = {
  application: applicationSection,
  branding: brandingSection,
  security: securitySection,
  features: featuresSection,
  oidc: oidcSection,
  integrations: integrationsSection,
  notifications: notificationsSection,
} as const;

export type SectionName = keyof typeof SECTION_SCHEMAS;
export const SECTION_NAMES = Object.keys(SECTION_SCHEMAS) as SectionName[];

export function isSectionName(name: string): name is SectionName {
  return Object.prototype.hasOwnProperty.call(SECTION_SCHEMAS, name);
}

/** A tenant's overrides: each section as its schema outputs it (sensitive fields sealed when stored). */
export type TenantOverrides = { [K in SectionName]?: z.output<(typeof SECTION_SCHEMAS)[K]> };

/** The whole overrides object, for the response document (OpenAPI) and its serializer. */
export const overridesSchema = z.object(
  Object.fromEntries(SECTION_NAMES.map((name) => [name, SECTION_SCHEMAS[name].optional()])) as { [K in SectionName]: z.ZodOptional<(typeof SECTION_SCHEMAS)[K]> },
);

/**
 * Every sensitive field, as `<section>.<path>` with `*` for any key: sealed at rest (secrets.ts),
 * never returned in clear. A new secret field is added here and nowhere else.
 */
export const SENSITIVE_FIELDS = ['integrations.smtp.password', 'features.social_login.providers.*.client_secret', 'notifications.sms.api_key'] as const;
