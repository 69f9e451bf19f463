/**
 * The one configuration schema. Every setting of the spec and CONTRACT.md lives here with its
 * default. A setting's environment variable is its path joined with `_` and upper-cased:
 * `security.key_store.rotation_interval_days` -> SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS,
 * `multi_tenancy.provider_pool.max_size` -> MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE, `port` -> PORT.
 * The same nested shape is accepted from the JSON file named by SVC_CONFIG_FILE (env wins).
 *
 * Over 300 lines, on purpose: one schema, so every setting, its default and its environment
 * variable are found in one place.
 */
import { z } from 'zod';
import { productLocale } from './locales.js';
import { socialLoginGlobalSchema } from './social.js';

const bool = z.boolean();
const posInt = z.number().int().positive();
const nonNegInt = z.number().int().nonnegative();
const VSCHAR = /^[\x20-\x7e]+$/;
const VSCHAR_MESSAGE = 'must be printable ASCII (RFC 6749 Appendix A: VSCHAR)';

export const SIGNING_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;
export type SigningAlg = (typeof SIGNING_ALGORITHMS)[number];

/**
 * The ID token algorithm of a client that names none: RS256, OpenID Connect's default (what a
 * relying party library expects of a client registered without one), when the key store has it;
 * otherwise the first configured algorithm, the only way such a client can sign in at all.
 */
export function defaultIdTokenAlg(algorithms: readonly SigningAlg[]): SigningAlg {
  return algorithms.includes('RS256') ? 'RS256' : algorithms[0]!;
}

function isRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** A PostgreSQL connection URI (postgres:// or postgresql://; the host may be left to `?host=` for a socket). */
function isPostgresUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'postgres:' || url.protocol === 'postgresql:';
  } catch {
    return false;
  }
}

export const configSchema = z.object({
  host: z.string().min(1).default('0.0.0.0'),
  port: z.number().int().min(0).max(65535).default(3000),
  /** Public address of the service; default http://localhost:$PORT. */
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  node_env: z.enum(['development', 'staging', 'production', 'test']).default('development'),

  http: z
    .object({
      /**
       * Share HOST:PORT with other processes (SO_REUSEPORT; the kernel splits connections between
       * them). Off by default: a second instance on a taken port refuses to start.
       */
      reuse_port: bool.default(false),
      /** Reverse proxies whose X-Forwarded-For is believed (CIDR list, default none; src/http/client-ip.ts). */
      trusted_proxies: z.array(z.string()).default([]),
    })
    .prefault({}),

  oidc: z
    .object({
      path: z.string().regex(/^\/[A-Za-z0-9/_-]*[A-Za-z0-9_-]$/, 'must start with / and not end with /').default('/oidc/v1'),
      ttl: z
        .object({
          access_token: posInt.max(86400).default(3600),
          id_token: posInt.max(86400).default(3600),
          authorization_code: posInt.max(600).default(60),
          refresh_token: posInt.max(7776000).default(1209600),
          device_code: posInt.max(3600).default(600),
          session: posInt.max(7776000).default(1209600),
          interaction: posInt.max(86400).default(3600),
        })
        .prefault({}),
      device_poll_interval: posInt.max(60).default(5),
      /**
       * Issue 18 item 2: `granted` puts the claims the granted scopes allow (email, profile) into the
       * ID token even when an access token is issued, as most providers do and relying parties with
       * default settings expect; `conform` keeps OIDC Core 5.4 strictly (userinfo only).
       */
      id_token_claims: z.enum(['granted', 'conform']).default('granted'),
    })
    .prefault({}),

  storage: z
    .object({
      adapter: z.enum(['sqlite', 'postgresql']).default('sqlite'),
      sqlite: z.object({ path: z.string().min(1).default('./data/svc.db') }).prefault({}),
      postgresql: z
        .object({
          url: z.string().refine((v) => v === '' || isPostgresUrl(v), 'must be a postgres:// or postgresql:// URL (postgresql://user[:password]@host[:port]/database)').optional(),
          /** Connections per instance. */
          pool_max: posInt.max(1000).default(10),
          /** Longest wait for a pooled connection (pool exhausted, server unreachable). */
          connect_timeout_ms: posInt.max(600_000).default(5000),
          /** Server-side statement_timeout; 0 = none. */
          statement_timeout_ms: nonNegInt.default(5000),
          /** Statements slower than this are logged at warn (without parameters); 0 = off. */
          slow_query_ms: nonNegInt.default(200),
          /**
           * Statements used often are prepared on each connection (SQL PREPARE/EXECUTE); false
           * behind a pooler in transaction mode, which does not keep them per client.
           */
          prepared_statements: bool.default(true),
          /**
           * Users read by the token paths are kept in memory, evicted by the database's change
           * notices (LISTEN on a connection of its own; storage/postgresql/user-cache.ts).
           */
          user_cache: bool.default(true),
        })
        .prefault({}),
    })
    .prefault({}),

  redis: z
    .object({
      /**
       * redis:// or rediss:// (TLS) with a host, the forms the README documents. Anything else
       * stopped nothing: ioredis took `notaurl` or `http://...` for a socket path and start-up went
       * on degraded, as if a well-formed Redis were only unreachable.
       */
      // Empty means none, as unset (a deployment template's `REDIS_URL=`).
      url: z.string().refine((v) => v === '' || isRedisUrl(v), 'must be a redis:// or rediss:// URL with a host (redis://[:password@]host[:port][/db])').optional(),
      /**
       * First segment of every Redis key and pub/sub channel (`<prefix>:<tenant>:...`), so several
       * deployments (or test runs) can share one Redis. CONTRACT.md's channels use the default.
       */
      key_prefix: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only (no ":")').default('svc'),
    })
    .prefault({}),

  svc: z
    .object({
      /** 32 bytes, base64 (AES-256-GCM key for private keys and sensitive fields). */
      encryption_key: z
        .string()
        .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes encoded as base64')
        .optional(),
      config_file: z.string().optional(),
      bootstrap: z
        .object({
          // RFC 6749 Appendix A: client-id and client-secret are *VSCHAR (printable ASCII); anything
          // else could be set here but never presented in a Basic header the service decodes.
          client_id: z.string().min(1).max(255).regex(VSCHAR, VSCHAR_MESSAGE).optional(),
          client_secret: z.string().min(16, 'must be at least 16 characters').max(512).regex(VSCHAR, VSCHAR_MESSAGE).optional(),
          admin_email: z.email().optional(),
          admin_password: z.string().min(8).max(128).optional(),
        })
        .prefault({}),
    })
    .prefault({}),

  multi_tenancy: z
    .object({
      enabled: bool.default(false),
      extraction_priority: z.array(z.enum(['header', 'subdomain'])).min(1).default(['header', 'subdomain']),
      tenant_header: z.string().regex(/^[a-z0-9-]+$/, 'must be a lower-case header name').default('x-tenant-id'),
      provider_pool: z
        .object({
          max_size: posInt.max(100000).default(50),
          idle_ttl_ms: posInt.default(1800000),
          cleanup_interval_ms: posInt.default(60000),
        })
        .prefault({}),
      /**
       * Loaded tenant state (effective config, imported signing keys, client records) kept for
       * tenants beyond the provider pool, so a pool miss needs no storage round trip
       * (tenancy/state-cache.ts). Invalidated by the tenant events; ttl_ms is a safety net.
       */
      tenant_cache: z
        .object({
          max_size: posInt.max(1000000).default(10000),
          ttl_ms: posInt.default(3600000),
        })
        .prefault({}),
    })
    .prefault({}),

  security: z
    .object({
      key_store: z
        .object({
          rotation_interval_days: posInt.max(3650).default(90),
          overlap_window_seconds: nonNegInt.default(7200),
          // A repeated algorithm would mean nothing more (one key per algorithm) and hide a typo.
          algorithms: z
            .array(z.enum(SIGNING_ALGORITHMS))
            .min(1)
            .superRefine((algs, ctx) => {
              const repeated = algs.filter((alg, i) => algs.indexOf(alg) !== i);
              if (repeated.length) ctx.addIssue({ code: 'custom', message: `lists ${[...new Set(repeated)].join(', ')} more than once; name each algorithm once` });
            })
            .default(['RS256', 'ES256', 'EdDSA']),
        })
        .prefault({}),
      logging: z
        .object({
          enabled: bool.default(true),
          level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).default('info'),
          pretty_print: bool.default(true),
          file_logging: z
            .object({ enabled: bool.default(true), directory: z.string().min(1).default('logs') })
            .prefault({}),
          /**
           * Issue 17: one `request` line per request at info costs a hot path more than the request
           * itself. off | sampled | all; unset = `all` in development, `off` elsewhere.
           */
          access_log: z.enum(['off', 'sampled', 'all']).optional(),
          /** The share of requests logged when access_log is `sampled` (0 < rate <= 1). */
          access_log_sample_rate: z.number().gt(0).max(1).default(0.01),
        })
        .prefault({}),
      rate_limit: z
        .object({
          read: posInt.default(600),
          write: posInt.default(120),
          delete: posInt.default(60),
          sensitive: posInt.default(10),
          window_seconds: posInt.default(60),
        })
        .prefault({}),
      /** Platform floors for tenant overrides (src/tenancy/config/policy.ts): a tenant may tighten, never loosen. */
      password_policy: z
        .object({
          // Spec 8: user passwords are 8-128 characters.
          min_length: z.number().int().min(8).max(128).default(8),
          require_uppercase: bool.default(false),
          require_lowercase: bool.default(false),
          require_digit: bool.default(false),
          require_symbol: bool.default(false),
          /** Refuse the 10,000 most common breached passwords (assets/breached-passwords.txt). */
          check_breached: bool.default(false),
        })
        .prefault({}),
      mfa: z
        .object({
          required: bool.default(false),
          // Which second factors are offered (issue 14): a disabled one is neither enrolled nor accepted.
          totp_enabled: bool.default(true),
          webauthn_enabled: bool.default(true),
        })
        .superRefine((v, ctx) => {
          // Required with no method on would let every password-only sign-in through (spec 1.5 rule 2).
          if (v.required && !v.totp_enabled && !v.webauthn_enabled) {
            ctx.addIssue({ code: 'custom', path: ['required'], message: 'needs totp_enabled or webauthn_enabled: with both off no second factor could be asked' });
          }
        })
        .prefault({}),
      password: z
        .object({
          argon2: z
            .object({
              memory_cost: posInt.min(1024).default(19456),
              time_cost: posInt.default(2),
              parallelism: posInt.max(16).default(1),
            })
            .prefault({}),
        })
        .prefault({}),
      login: z
        .object({
          max_failed_attempts: posInt.default(5),
          failure_window_seconds: posInt.default(900),
          lockout_seconds: posInt.default(900),
          per_ip_per_minute: posInt.default(120),
        })
        .prefault({}),
      outbound: z.object({ allow_private_networks: bool.default(false) }).prefault({}),
      /** Self-service sign-up (src/ui/signup): off by default; a tenant may override the section. */
      signup: z
        .object({
          enabled: bool.default(false),
          /** Empty: any domain. */
          allowed_email_domains: z.array(z.string().toLowerCase().regex(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a domain name')).default([]),
          /** Unset: true when SMTP is configured (CONTRACT.md). */
          require_email_verification: bool.optional(),
        })
        .prefault({}),
      /** Recognising returning devices; a tenant may override (src/ui/account/devices.ts). */
      device_matching: z
        .object({ enabled: bool.default(false), trusted_device_days: posInt.max(365).default(30), notify_new_device: bool.default(true) })
        .prefault({}),
      /** Password reset by e-mail: lifetime of the mailed link. */
      password_reset: z.object({ ttl_seconds: posInt.min(300).max(86400).default(3600) }).prefault({}),
    })
    .prefault({}),

  /** End-user pages and e-mails: title and languages (a tenant may override the section). */
  application: z
    .object({
      title: z.string().trim().min(1).max(255).optional(),
      default_locale: productLocale.default('en'),
      /** Empty: every language the product has. */
      available_locales: z.array(productLocale).default([]),
    })
    .superRefine((v, ctx) => {
      if (v.available_locales.length && !v.available_locales.includes(v.default_locale)) {
        ctx.addIssue({ code: 'custom', path: ['default_locale'], message: 'must be one of available_locales' });
      }
    })
    .prefault({}),

  /** Outgoing e-mail (src/mail). No host: development logs each message, staging/production offer no e-mail features. */
  integrations: z
    .object({
      smtp: z
        .object({
          host: z.string().trim().min(1).max(253).regex(/^[A-Za-z0-9.-]+$/, 'must be a host name').optional(),
          port: z.number().int().min(1).max(65535).default(587),
          username: z.string().min(1).max(255).optional(),
          password: z.string().min(1).max(1024).optional(),
          from: z.email().max(255).optional(),
          /** TLS from the first byte (port 465); false: STARTTLS when the server offers it. */
          secure: bool.default(false),
        })
        .prefault({}),
    })
    .prefault({}),

  /** Which security events users are told about by e-mail (each user may turn them off on the account page). */
  notifications: z
    .object({
      security_alerts: z
        .object({
          new_device_login: bool.default(true),
          password_changed: bool.default(true),
          mfa_changed: bool.default(true),
          account_locked: bool.default(true),
        })
        .prefault({}),
    })
    .prefault({}),

  features: z
    .object({
      metrics: z
        .object({
          enabled: bool.default(false),
          path: z.string().regex(/^\/[A-Za-z0-9/_-]*$/).default('/metrics'),
          include_default_metrics: bool.default(true),
          prefix: z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/).default('svc_'),
          /** When set, scrapes need `Authorization: Bearer <it>` (src/metrics/access.ts). */
          bearer_token: z.string().min(16, 'must be at least 16 characters').max(512).optional(),
        })
        .prefault({}),
      /** Social login providers (config file) and the `_ops` callback relay; see config/social.ts. */
      social_login: socialLoginGlobalSchema.prefault({}),
    })
    .prefault({}),

  workers: z
    .object({
      /** Piscina threads for Argon2; 0 = from os.availableParallelism(). */
      argon2_threads: nonNegInt.max(64).default(0),
      /** Bounded queue: past it, logins get 503 with Retry-After. */
      argon2_max_queue: posInt.default(256),
      /**
       * Nice value (0-19) of the Argon2 threads: they yield the cores to the event loop and the
       * signing threads, so a burst of logins does not delay other requests. 0 = same priority.
       */
      argon2_nice: nonNegInt.max(19).default(10),
    })
    .prefault({}),
});

export type ConfigInput = z.input<typeof configSchema>;
export type ParsedConfig = z.output<typeof configSchema>;

/** The resolved configuration handed to every module (base_url filled in). */
export type Config = Omit<ParsedConfig, 'base_url'> & { base_url: string };
