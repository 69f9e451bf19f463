import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, settingLeaves } from '../../src/config/index.js';

const KEY = Buffer.alloc(32, 1).toString('base64');

/** The ConfigError thrown by loadConfig(env), or a failure if it did not throw one. */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('config defaults', () => {
  const c = loadConfig({});

  it('runs single-tenant on SQLite in development on port 3000', () => {
    expect(c.host).toBe('0.0.0.0');
    expect(c.port).toBe(3000);
    expect(c.base_url).toBe('http://localhost:3000');
    expect(c.node_env).toBe('development');
    expect(c.storage.adapter).toBe('sqlite');
    expect(c.storage.sqlite.path).toBe('./data/svc.db');
    expect(c.multi_tenancy.enabled).toBe(false);
    expect(c.multi_tenancy.tenant_header).toBe('x-tenant-id');
    expect(c.redis.url).toBeUndefined();
  });

  it('has the spec and contract defaults for OIDC, keys, pool and rate limits', () => {
    expect(c.oidc.path).toBe('/oidc/v1');
    expect(c.oidc.ttl).toMatchObject({ access_token: 3600, id_token: 3600, authorization_code: 60, refresh_token: 1209600, device_code: 600, session: 1209600 });
    expect(c.oidc.device_poll_interval).toBe(5);
    expect(c.security.key_store).toEqual({ rotation_interval_days: 90, overlap_window_seconds: 7200, algorithms: ['RS256', 'ES256', 'EdDSA'] });
    expect(c.multi_tenancy.provider_pool).toEqual({ max_size: 50, idle_ttl_ms: 1800000, cleanup_interval_ms: 60000 });
    expect(c.security.rate_limit).toMatchObject({ read: 600, write: 120, delete: 60, sensitive: 10, window_seconds: 60 });
    expect(c.security.password.argon2).toEqual({ memory_cost: 19456, time_cost: 2, parallelism: 1 });
    expect(c.security.logging).toMatchObject({ enabled: true, level: 'info', pretty_print: true, file_logging: { enabled: true, directory: 'logs' } });
    expect(c.features.metrics).toEqual({ enabled: false, path: '/metrics', include_default_metrics: true, prefix: 'svc_' });
  });

  it('derives BASE_URL from PORT and strips a trailing slash from an explicit one', () => {
    expect(loadConfig({ PORT: '8080' }).base_url).toBe('http://localhost:8080');
    expect(loadConfig({ BASE_URL: 'https://id.example.com/' }).base_url).toBe('https://id.example.com');
  });

  it('refuses a BASE_URL with a path, query or fragment (every route is served from the root), and a STORAGE_POSTGRESQL_URL that is no PostgreSQL URL', () => {
    for (const url of ['https://id.example.com/base', 'https://id.example.com/base/', 'https://id.example.com/?x=1', 'https://id.example.com/#f']) {
      expect(configError({ BASE_URL: url }).problems, url).toEqual([expect.stringMatching(/^BASE_URL: must be an origin without a path, query or fragment \(e\.g\. https:\/\/id\.example\.com\)/)]);
    }
    for (const url of ['notaurl', 'mysql://x/y', 'http://db.example.com/svc']) {
      expect(configError({ STORAGE_POSTGRESQL_URL: url }).problems, url).toEqual([expect.stringMatching(/^STORAGE_POSTGRESQL_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/)]);
    }
    expect(loadConfig({ STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: 'postgresql:///svc?host=/var/run/postgresql' }).storage.postgresql.url).toBe('postgresql:///svc?host=/var/run/postgresql');
  });
});

describe('environment mapping', () => {
  it('names every dotted setting by upper-casing and replacing dots with underscores', () => {
    const names = settingLeaves().map((l) => l.env);
    for (const name of [
      'SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS',
      'SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS',
      'SECURITY_KEY_STORE_ALGORITHMS',
      'FEATURES_METRICS_ENABLED',
      'MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE',
      'MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS',
      'MULTI_TENANCY_PROVIDER_POOL_CLEANUP_INTERVAL_MS',
      'MULTI_TENANCY_EXTRACTION_PRIORITY',
      'MULTI_TENANCY_TENANT_HEADER',
      'SECURITY_LOGGING_FILE_LOGGING_DIRECTORY',
      'SECURITY_RATE_LIMIT_SENSITIVE',
      'STORAGE_SQLITE_PATH',
      'SVC_ENCRYPTION_KEY',
      'SVC_BOOTSTRAP_CLIENT_ID',
      'OIDC_PATH',
      'PORT',
    ]) {
      expect(names).toContain(name);
    }
  });

  it('reads numbers, booleans and strings from their variables', () => {
    const c = loadConfig({
      SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS: '30',
      SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS: '0',
      FEATURES_METRICS_ENABLED: 'true',
      FEATURES_METRICS_PATH: '/prom',
      MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE: '7',
      MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS: '1000',
      SECURITY_RATE_LIMIT_SENSITIVE: '2',
      SECURITY_LOGGING_PRETTY_PRINT: 'false',
      OIDC_PATH: '/auth/v2',
      STORAGE_SQLITE_PATH: '/tmp/x.db',
      HOST: '127.0.0.1',
    });
    expect(c.security.key_store.rotation_interval_days).toBe(30);
    expect(c.security.key_store.overlap_window_seconds).toBe(0);
    expect(c.features.metrics.enabled).toBe(true);
    expect(c.features.metrics.path).toBe('/prom');
    expect(c.multi_tenancy.provider_pool.max_size).toBe(7);
    expect(c.multi_tenancy.provider_pool.idle_ttl_ms).toBe(1000);
    expect(c.security.rate_limit.sensitive).toBe(2);
    expect(c.security.logging.pretty_print).toBe(false);
    expect(c.oidc.path).toBe('/auth/v2');
    expect(c.storage.sqlite.path).toBe('/tmp/x.db');
    expect(c.host).toBe('127.0.0.1');
    // Untouched siblings keep their defaults.
    expect(c.security.key_store.algorithms).toEqual(['RS256', 'ES256', 'EdDSA']);
    expect(c.multi_tenancy.provider_pool.cleanup_interval_ms).toBe(60000);
  });

  it.each([
    ['1', true],
    ['yes', true],
    ['ON', true],
    ['0', false],
    ['no', false],
    ['FALSE', false],
  ])('reads boolean %s as %s', (raw, value) => {
    expect(loadConfig({ FEATURES_METRICS_ENABLED: raw }).features.metrics.enabled).toBe(value);
  });

  it('splits comma-separated lists and trims the items', () => {
    expect(loadConfig({ SECURITY_KEY_STORE_ALGORITHMS: 'RS256,ES256' }).security.key_store.algorithms).toEqual(['RS256', 'ES256']);
    expect(loadConfig({ SECURITY_KEY_STORE_ALGORITHMS: ' EdDSA , RS256 ,' }).security.key_store.algorithms).toEqual(['EdDSA', 'RS256']);
    expect(loadConfig({ MULTI_TENANCY_EXTRACTION_PRIORITY: 'subdomain,header' }).multi_tenancy.extraction_priority).toEqual(['subdomain', 'header']);
  });

  it('ignores variables that are not settings', () => {
    expect(() => loadConfig({ PATH: '/usr/bin', SOMETHING_ELSE: 'x' })).not.toThrow();
  });
});

describe('invalid settings stop start-up with the variable name and the reason', () => {
  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', ''],
    ['SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS', '0'],
    ['SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS', '1.5'],
    ['SECURITY_KEY_STORE_ALGORITHMS', 'RS256,HS256'],
    ['SECURITY_KEY_STORE_ALGORITHMS', ''],
    ['FEATURES_METRICS_ENABLED', 'maybe'],
    ['SECURITY_LOGGING_LEVEL', 'verbose'],
    ['NODE_ENV', 'prod'],
    ['BASE_URL', 'not a url'],
    ['OIDC_PATH', 'oidc/v1/'],
    ['MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE', '-1'],
    ['MULTI_TENANCY_EXTRACTION_PRIORITY', 'header,cookie'],
    ['SECURITY_RATE_LIMIT_READ', 'lots'],
    ['SVC_ENCRYPTION_KEY', Buffer.alloc(16).toString('base64')],
  ])('%s=%j', (name, value) => {
    const err = configError({ [name]: value });
    const problem = err.problems.find((p) => p.startsWith(`${name}: `));
    expect(problem, `problems: ${err.problems.join(' | ')}`).toBeDefined();
    // A reason follows the name.
    expect(problem!.length).toBeGreaterThan(name.length + 3);
    expect(err.message).toContain(name);
  });

  it('refuses a REDIS_URL that is not a redis:// or rediss:// URL (also in multi-tenant mode); accepts the documented forms', () => {
    for (const value of ['notaurl', 'http://127.0.0.1:6379', 'redis://', '/tmp/redis.sock', 'redis//127.0.0.1:6379']) {
      for (const mt of [{}, { MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: 'postgres://x' }]) {
        const err = configError({ ...mt, REDIS_URL: value });
        expect(err.problems, value).toEqual([expect.stringMatching(/^REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/)]);
      }
    }
    for (const value of ['redis://127.0.0.1:6379', 'redis://:password@redis:6379', 'rediss://user:pw@cache.example.com:6380/2', 'redis://[::1]:6379']) {
      expect(loadConfig({ REDIS_URL: value }).redis.url).toBe(value);
    }
    // Empty is none, as unset (single-tenant: no Redis).
    expect(loadConfig({ REDIS_URL: '' }).redis.url || undefined).toBeUndefined();
  });

  it('refuses an algorithm listed twice in security.key_store.algorithms, from the environment or the file', () => {
    expect(configError({ SECURITY_KEY_STORE_ALGORITHMS: 'RS256,RS256' }).problems).toEqual(['SECURITY_KEY_STORE_ALGORITHMS: lists RS256 more than once; name each algorithm once']);
    expect(configError({ SECURITY_KEY_STORE_ALGORITHMS: 'ES256, EdDSA,ES256,EdDSA,ES256' }).problems).toEqual(['SECURITY_KEY_STORE_ALGORITHMS: lists ES256, EdDSA more than once; name each algorithm once']);
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-algs-'));
    try {
      const path = join(dir, 'algs.json');
      writeFileSync(path, JSON.stringify({ security: { key_store: { algorithms: ['EdDSA', 'EdDSA'] } } }));
      expect(configError({ SVC_CONFIG_FILE: path }).problems).toEqual(['SECURITY_KEY_STORE_ALGORITHMS: lists EdDSA more than once; name each algorithm once']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('explains a short encryption key', () => {
    const err = configError({ SVC_ENCRYPTION_KEY: 'c2hvcnQ=' });
    expect(err.problems).toContain('SVC_ENCRYPTION_KEY: must be 32 bytes encoded as base64');
  });

  it('reports every bad setting at once', () => {
    const err = configError({ PORT: 'abc', SECURITY_LOGGING_LEVEL: 'loud' });
    expect(err.problems.some((p) => p.startsWith('PORT: '))).toBe(true);
    expect(err.problems.some((p) => p.startsWith('SECURITY_LOGGING_LEVEL: '))).toBe(true);
  });

  it.each(['production', 'staging'])('refuses NODE_ENV=%s without SVC_ENCRYPTION_KEY', (env) => {
    const err = configError({ NODE_ENV: env });
    expect(err.problems).toEqual([expect.stringMatching(/^SVC_ENCRYPTION_KEY: required when NODE_ENV=/)]);
    expect(loadConfig({ NODE_ENV: env, SVC_ENCRYPTION_KEY: KEY }).node_env).toBe(env);
  });

  it('refuses multi-tenancy on SQLite with one line naming the setting and the reason', () => {
    const err = configError({ MULTI_TENANCY_ENABLED: 'true', REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(err.problems).toHaveLength(1);
    const [line] = err.problems;
    expect(line).toMatch(/^MULTI_TENANCY_ENABLED: /);
    expect(line).toMatch(/postgresql/i);
    expect(line).not.toContain('\n');
  });

  it('refuses multi-tenancy without Redis', () => {
    const err = configError({ MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: 'postgres://x@127.0.0.1/db' });
    expect(err.problems).toEqual([expect.stringMatching(/^MULTI_TENANCY_ENABLED: .*REDIS_URL/)]);
  });

  it('needs a URL for PostgreSQL and both bootstrap variables together', () => {
    expect(configError({ STORAGE_ADAPTER: 'postgresql' }).problems).toEqual([expect.stringMatching(/^STORAGE_POSTGRESQL_URL: /)]);
    expect(configError({ SVC_BOOTSTRAP_CLIENT_ID: 'admin' }).problems).toEqual([expect.stringMatching(/^SVC_BOOTSTRAP_CLIENT_ID: /)]);
    expect(configError({ SVC_BOOTSTRAP_CLIENT_ID: 'admin', SVC_BOOTSTRAP_CLIENT_SECRET: 'short' }).problems).toEqual([
      expect.stringMatching(/^SVC_BOOTSTRAP_CLIENT_SECRET: /),
    ]);
  });

  it('refuses a bootstrap client id or secret a client could never present (RFC 6749 VSCHAR: printable ASCII)', () => {
    const secret = 'a-long-enough-secret-0123';
    expect(configError({ SVC_BOOTSTRAP_CLIENT_ID: 'admin é', SVC_BOOTSTRAP_CLIENT_SECRET: secret }).problems).toEqual([
      'SVC_BOOTSTRAP_CLIENT_ID: must be printable ASCII (RFC 6749 Appendix A: VSCHAR)',
    ]);
    expect(configError({ SVC_BOOTSTRAP_CLIENT_ID: 'admin', SVC_BOOTSTRAP_CLIENT_SECRET: `${secret}\u00e9` }).problems).toEqual([
      'SVC_BOOTSTRAP_CLIENT_SECRET: must be printable ASCII (RFC 6749 Appendix A: VSCHAR)',
    ]);
    // RFC 6749's own examples: ':', '%', '+' and spaces are VSCHAR (Basic encodes them).
    expect(loadConfig({ SVC_BOOTSTRAP_CLIENT_ID: 'a:b%c+d e', SVC_BOOTSTRAP_CLIENT_SECRET: `s:e%c+r/e t=${secret}` }).svc.bootstrap.client_id).toBe('a:b%c+d e');
  });
});

describe('settings refused rather than ignored', () => {
  it('refuses the social-login relay in single-tenant mode, naming the variable, and accepts it in multi-tenant mode', () => {
    expect(configError({ FEATURES_SOCIAL_LOGIN_RELAY: 'true' }).problems).toEqual([
      'FEATURES_SOCIAL_LOGIN_RELAY: not supported in single-tenant mode (the relay needs MULTI_TENANCY_ENABLED=true)',
    ]);
    expect(loadConfig({ FEATURES_SOCIAL_LOGIN_RELAY: 'false' }).features.social_login.relay).toBe(false);
    const mt = { MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: 'postgres://x', REDIS_URL: 'redis://x' };
    expect(loadConfig({ ...mt, FEATURES_SOCIAL_LOGIN_RELAY: 'true' }).features.social_login.relay).toBe(true);
  });

  it("refuses locales the pages are not written in, and a default outside the offered ones", () => {
    const problems = configError({ APPLICATION_AVAILABLE_LOCALES: 'xx,yy', APPLICATION_DEFAULT_LOCALE: 'pt-BR' }).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^APPLICATION_AVAILABLE_LOCALES: .*en, fr, de, es/),
        expect.stringMatching(/^APPLICATION_DEFAULT_LOCALE: .*en, fr, de, es/),
      ]),
    );
    expect(configError({ APPLICATION_AVAILABLE_LOCALES: 'fr,de', APPLICATION_DEFAULT_LOCALE: 'en' }).problems).toEqual([
      'APPLICATION_DEFAULT_LOCALE: must be one of available_locales',
    ]);
    // A regional tag is served in its language (fr-CA pages are French).
    const ok = loadConfig({ APPLICATION_AVAILABLE_LOCALES: 'fr-CA,en', APPLICATION_DEFAULT_LOCALE: 'fr-CA' }).application;
    expect(ok).toMatchObject({ available_locales: ['fr-CA', 'en'], default_locale: 'fr-CA' });
  });

  it('refuses a metrics path that would hide one of the service\'s routes or be hidden by one', () => {
    expect(configError({ FEATURES_METRICS_PATH: '/oidc/v1/jwks' }).problems).toEqual([expect.stringMatching(/^FEATURES_METRICS_PATH: .*under the OIDC path \/oidc\/v1/)]);
    expect(configError({ OIDC_PATH: '/auth', FEATURES_METRICS_PATH: '/auth' }).problems).toEqual([expect.stringMatching(/^FEATURES_METRICS_PATH: /)]);
    for (const path of ['/healthz', '/readyz', '/api/v1/metrics', '/account', '/admin/metrics', '/assets/metrics']) {
      expect(configError({ FEATURES_METRICS_PATH: path }).problems, path).toEqual([expect.stringMatching(/^FEATURES_METRICS_PATH: .*taken by the service's own/)]);
    }
    for (const path of ['/metrics', '/oidc', '/internal/metrics', '/apis', '/platforms']) expect(loadConfig({ FEATURES_METRICS_PATH: path }).features.metrics.path).toBe(path);
  });

  it('refuses a metrics path on or under /platform, whose routes it would hide (both modes)', () => {
    const multiTenant = { MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: 'postgres://x@127.0.0.1/db', REDIS_URL: 'redis://127.0.0.1:6379' };
    for (const mode of [multiTenant, {}]) {
      for (const path of ['/platform', '/platform/tenants', '/platform/metrics']) {
        expect(configError({ ...mode, FEATURES_METRICS_PATH: path }).problems, path).toEqual([expect.stringMatching(/^FEATURES_METRICS_PATH: .*taken by the service's own \/platform route/)]);
      }
    }
    expect(loadConfig({ ...multiTenant, FEATURES_METRICS_PATH: '/metrics' }).features.metrics.path).toBe('/metrics');
  });
});

describe('SVC_CONFIG_FILE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it('gives the same settings in nested form, and the environment wins', () => {
    const path = file(
      'ok.json',
      JSON.stringify({
        port: 4000,
        security: { key_store: { rotation_interval_days: 10, algorithms: ['ES256'] }, rate_limit: { read: 5 } },
        features: { metrics: { enabled: true } },
      }),
    );
    const c = loadConfig({ SVC_CONFIG_FILE: path, SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS: '20', SECURITY_RATE_LIMIT_WRITE: '9' });
    expect(c.port).toBe(4000);
    expect(c.base_url).toBe('http://localhost:4000');
    expect(c.security.key_store.rotation_interval_days).toBe(20); // env wins
    expect(c.security.key_store.algorithms).toEqual(['ES256']); // file value kept
    expect(c.security.rate_limit.read).toBe(5); // file value kept beside an env value in the same section
    expect(c.security.rate_limit.write).toBe(9);
    expect(c.features.metrics.enabled).toBe(true);
  });

  it("refuses a social provider URL the outbound rule refuses, as a tenant's is refused when saved", () => {
    const provider = (issuer: string) => JSON.stringify({ features: { social_login: { providers: { corp: { type: 'oidc', enabled: true, client_id: 'c', client_secret: 's', issuer } } } } });
    const metadata = file('metadata.json', provider('http://169.254.169.254/latest'));
    expect(configError({ SVC_CONFIG_FILE: metadata }).problems).toEqual([
      'SVC_CONFIG_FILE: features.social_login.providers.corp.issuer: the target is a private or special-purpose address (security.outbound.allow_private_networks is off)',
    ]);
    // Loopback is a development convenience: accepted in development, refused in production.
    const loopback = file('loopback.json', provider('http://127.0.0.1:3442'));
    expect(loadConfig({ SVC_CONFIG_FILE: loopback, NODE_ENV: 'development' }).features.social_login.providers.corp?.issuer).toBe('http://127.0.0.1:3442');
    expect(configError({ SVC_CONFIG_FILE: loopback, NODE_ENV: 'production', SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }).problems).toContainEqual(
      expect.stringMatching(/^SVC_CONFIG_FILE: features\.social_login\.providers\.corp\.issuer: the target is a loopback address/),
    );
  });

  it('validates values from the file like those from the environment', () => {
    const path = file('bad-value.json', JSON.stringify({ security: { key_store: { rotation_interval_days: -3 } } }));
    const err = configError({ SVC_CONFIG_FILE: path });
    expect(err.problems).toEqual([expect.stringMatching(/^SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS: /)]);
  });

  it('refuses a key that is not a setting, naming its path, and accepts every documented section', () => {
    for (const [content, key] of [
      [{ security: { rate_limit: { reed: 5 } } }, 'security.rate_limit.reed'],
      [{ branding: { company_name: 'AcmeCo' } }, 'branding'],
      [{ security: { signup: { enabled: true, bogus: 1 } } }, 'security.signup.bogus'],
      [{ features: { social_login: { providers: {}, relai: true } } }, 'features.social_login.relai'],
    ] as const) {
      const path = file('unknown.json', JSON.stringify(content));
      const err = configError({ SVC_CONFIG_FILE: path });
      expect(err.problems).toEqual([`SVC_CONFIG_FILE: ${key} is not a setting (unknown key in ${path})`]);
    }
    // Inside a social provider (a strict object) zod names the key itself.
    const provider = file('provider.json', JSON.stringify({ features: { social_login: { providers: { google: { client_id: 'x', colour: 'red' } } } } }));
    expect(configError({ SVC_CONFIG_FILE: provider }).problems).toEqual([expect.stringMatching(/^FEATURES_SOCIAL_LOGIN_PROVIDERS_GOOGLE: .*colour/)]);

    const valid = file(
      'valid.json',
      JSON.stringify({
        host: '127.0.0.1',
        node_env: 'test',
        http: { trusted_proxies: ['10.0.0.0/8'] },
        oidc: { path: '/oidc', ttl: { access_token: 600 }, id_token_claims: 'conform' },
        storage: { sqlite: { path: './x.db' }, postgresql: { pool_max: 3 } },
        redis: { key_prefix: 'svc2' },
        svc: { bootstrap: { client_id: 'boot', client_secret: 'a-long-enough-secret' } },
        multi_tenancy: { provider_pool: { max_size: 7 }, tenant_cache: { ttl_ms: 1000 } },
        security: { logging: { file_logging: { enabled: false } }, rate_limit: { read: 5 }, signup: { enabled: true, allowed_email_domains: ['example.com'] }, password: { argon2: { time_cost: 3 } } },
        application: { title: 'Acme', default_locale: 'de', available_locales: ['de', 'en'] },
        integrations: { smtp: { host: 'mail.example.com', port: 25 } },
        notifications: { security_alerts: { password_changed: false } },
        features: { metrics: { enabled: true }, social_login: { upstream_timeout_ms: 5000, providers: { google: { enabled: true, client_id: 'id', client_secret: 'secret', attribute_mapping: { username: 'email' } } } } },
        workers: { argon2_threads: 1 },
      }),
    );
    const c = loadConfig({ SVC_CONFIG_FILE: valid });
    expect(c.multi_tenancy.provider_pool.max_size).toBe(7);
    expect(c.application.default_locale).toBe('de');
    expect(c.features.social_login.providers.google?.attribute_mapping).toEqual({ username: 'email' });
  });

  it('refuses a file that is not JSON, not an object or missing, naming SVC_CONFIG_FILE', () => {
    for (const path of [file('broken.json', '{ port: 1'), file('array.json', '[1,2]'), join(dir, 'missing.json')]) {
      const err = configError({ SVC_CONFIG_FILE: path });
      expect(err.problems).toEqual([expect.stringMatching(/^SVC_CONFIG_FILE: /)]);
    }
  });
});
