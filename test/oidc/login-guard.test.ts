/**
 * The brute-force guard takes its settings from the tenant's effective configuration it is handed
 * (the actor's, which changes with a reload), not from the global configuration of the context:
 * here the two differ, and only the tenant's numbers may act.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/audit/audit-log.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import { LoginGuard } from '../../src/oidc/login-guard.js';
import type { UserRecord } from '../../src/storage/types.js';
import { mergeConfig, type EffectiveConfig } from '../../src/tenancy/config/merge.js';
import type { PasswordHasher } from '../../src/workers/password-hasher.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';
import type { AppContext } from '../../src/context.js';

const T = 'guard-t';

function withLogin(config: Config, login: Partial<Config['security']['login']>): EffectiveConfig {
  const merged = mergeConfig(config, {});
  return { ...merged, security: { ...merged.security, login: { ...merged.security.login, ...login } } };
}

function user(id: string): UserRecord {
  const now = new Date().toISOString();
  return {
    id, email: `${id}@example.com`, email_verified: true, username: null, given_name: null, family_name: null, name: null, nickname: null,
    role: 'user', account_enabled: true, locked: false, locked_until: null, auth_provider: 'local', password_hash: null,
    mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null, deleted_at: null,
    created_at: now, updated_at: now, last_login_at: null,
  };
}

describe('LoginGuard reads the tenant configuration', () => {
  let tmp: TempStorage;
  let guard: LoginGuard;
  let tenantConfig: EffectiveConfig;
  const global = loadConfig({});

  beforeAll(() => {
    tmp = openTempStorage();
    const passwords = {} as PasswordHasher; // never reached: no test here hashes
    // The global numbers are generous; the tenant's are tight. Only the tight ones may act.
    tenantConfig = withLogin(global, { per_ip_per_minute: 2, max_failed_attempts: 2 });
    // The shared attempt counter is keyed by the context (in memory without Redis).
    const ctx = { storage: tmp.storage, passwords, audit: new AuditLog(tmp.storage, pino({ level: 'silent' })), config: global } as unknown as AppContext;
    guard = new LoginGuard(ctx, () => tenantConfig);
  });
  afterAll(async () => tmp?.close());

  it('limits attempts per IP by the tenant per_ip_per_minute, not the global one', async () => {
    await awayFromWindowEdge(60);
    expect(global.security.login.per_ip_per_minute).toBeGreaterThan(3);
    expect([await guard.allowIp(T, '198.51.100.7'), await guard.allowIp(T, '198.51.100.7'), await guard.allowIp(T, '198.51.100.7')]).toEqual([true, true, false]);
  });

  it('locks an account after the tenant max_failed_attempts, and follows a changed tenant config', async () => {
    expect(global.security.login.max_failed_attempts).toBeGreaterThan(2);
    const u = user('u1');
    await tmp.storage.users.create(T, u);
    expect(await guard.recordFailure(T, u, '198.51.100.8', undefined)).toBe(false);
    expect(await guard.recordFailure(T, u, '198.51.100.8', undefined)).toBe(true);
    expect((await tmp.storage.users.get(T, u.id))?.locked).toBe(true);

    // A reload brings a new effective config: the same guard now reads the new number.
    tenantConfig = withLogin(global, { max_failed_attempts: 3 });
    const v = user('u2');
    await tmp.storage.users.create(T, v);
    expect(await guard.recordFailure(T, v, '198.51.100.9', undefined)).toBe(false);
    expect(await guard.recordFailure(T, v, '198.51.100.9', undefined)).toBe(false);
    expect(await guard.recordFailure(T, v, '198.51.100.9', undefined)).toBe(true);
  });

  it('tells the one lock to onLocked with the language of the page the locking attempt came from', async () => {
    const told: Array<[string, string | undefined]> = [];
    tenantConfig = withLogin(global, { max_failed_attempts: 2 });
    const ctx = { storage: tmp.storage, passwords: {} as PasswordHasher, audit: new AuditLog(tmp.storage, pino({ level: 'silent' })), config: global } as unknown as AppContext;
    const alerting = new LoginGuard(ctx, () => tenantConfig, (_tenant, locked, lang) => told.push([locked.id, lang]));
    const w = user('u3');
    await tmp.storage.users.create(T, w);
    expect(await alerting.recordFailure(T, w, '198.51.100.10', undefined, 'de')).toBe(false);
    expect(await alerting.recordFailure(T, w, '198.51.100.10', undefined, 'fr')).toBe(true);
    // Past the threshold: the lock's answer, no second lock and no second alert.
    expect(await alerting.recordFailure(T, w, '198.51.100.10', undefined, 'es')).toBe(true);
    expect(told).toEqual([['u3', 'fr']]);
  });
});
