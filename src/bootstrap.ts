/**
 * Start-up provisioning:
 * - multi-tenant mode: the `_platforms` tenant (record and signing keys), created at the first
 *   start and idempotently afterwards (concurrent instances race harmlessly), and its bootstrap
 *   administrator from SVC_BOOTSTRAP_ADMIN_EMAIL/PASSWORD (spec 1.5), role `superadmin`, created
 *   once and never overwritten (the password may have been changed since), with a warning on
 *   every start while the variables stay set;
 * - the Management bootstrap client of CONTRACT.md, created once (idempotent) in `default`
 *   (single-tenant) or `_platforms` (multi-tenant), with a warning on every start while the
 *   variables stay set.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from './context.js';
import { ensureKeys } from './keys/keystore.js';
import { UniqueViolation } from './storage/errors.js';
import type { UserRecord } from './storage/types.js';
import { hashSecret } from './clients/secrets.js';
import { MANAGEMENT_SCOPES } from './oidc/scopes.js';
import { createClient } from './clients/operations.js';
import { DEFAULT_TENANT, PLATFORM_TENANT } from './tenancy/resolver.js';

export async function ensureBootstrapClient(ctx: AppContext): Promise<void> {
  const { client_id: id, client_secret: secret } = ctx.config.svc.bootstrap;
  if (!id || !secret) return;
  const tenant = ctx.config.multi_tenancy.enabled ? PLATFORM_TENANT : DEFAULT_TENANT;
  ctx.log.warn({ client_id: id, tenant }, 'SVC_BOOTSTRAP_CLIENT_ID/SECRET are set: create a permanent management client and remove them');
  const existing = await ctx.storage.clients.get(tenant, id);
  if (existing) {
    // The configured secret is authoritative for the bootstrap client: follow it if it changed.
    // Also rehashes a secret stored unkeyed before (`$sha256$`) under the server key.
    if (existing.secret_hash !== hashSecret(secret)) {
      await ctx.storage.clients.update(tenant, id, { secret_hash: hashSecret(secret), bump_generation: true });
      ctx.log.warn({ client_id: id }, 'bootstrap client secret changed to the configured value');
    }
    return;
  }
  try {
    await createClient(
      { ctx, tenant },
      {
        client_name: 'Bootstrap management client',
        application_type: 'web',
        redirect_uris: [],
        post_logout_redirect_uris: [],
        grant_types: ['client_credentials'],
        response_types: [],
        scope: MANAGEMENT_SCOPES.join(' '),
        token_endpoint_auth_method: 'client_secret_basic',
        contacts: [],
        tags: ['bootstrap'],
        require_pkce: false,
        first_party: true,
        description: 'Created from SVC_BOOTSTRAP_CLIENT_ID at start-up',
      },
      { clientId: id, secret, audit: () => ({ type: 'client.created', details: { client_id: id, source: 'bootstrap' } }) },
    );
  } catch (err) {
    // Another instance starting at the same moment created it first (the insert hit its key).
    if (await ctx.storage.clients.get(tenant, id).catch(() => undefined)) return;
    throw err;
  }
  ctx.log.info({ client_id: id, tenant }, 'bootstrap management client created');
}

/** The `_platforms` tenant record and keys (multi-tenant mode only). */
export async function ensurePlatformTenant(ctx: AppContext): Promise<void> {
  if (!ctx.config.multi_tenancy.enabled) return;
  if (!(await ctx.storage.tenants.get(PLATFORM_TENANT))) {
    const now = new Date().toISOString();
    try {
      await ctx.storage.tenants.create({ id: randomUUID(), slug: PLATFORM_TENANT, display_name: 'Platform', domain: null, status: 'active', created_at: now, updated_at: now });
      ctx.log.info({ tenant: PLATFORM_TENANT }, 'platform tenant created');
    } catch (err) {
      // Another instance starting at the same moment created it first.
      if (!(err instanceof UniqueViolation)) throw err;
    }
  }
  await ensureKeys(ctx.storage.keys, PLATFORM_TENANT, ctx.config.security.key_store.algorithms, ctx.sealer);
}

/** The bootstrap administrator of `_platforms` (spec 1.5), multi-tenant mode only. */
export async function ensureBootstrapAdmin(ctx: AppContext): Promise<void> {
  const { admin_email: email, admin_password: password } = ctx.config.svc.bootstrap;
  if (!ctx.config.multi_tenancy.enabled || !email || !password) return;
  ctx.log.warn({ email, tenant: PLATFORM_TENANT }, 'SVC_BOOTSTRAP_ADMIN_EMAIL/PASSWORD are set: create a permanent platform administrator and remove them');
  if (await ctx.storage.users.findByEmail(PLATFORM_TENANT, email)) return;
  const now = new Date().toISOString();
  const user: UserRecord = {
    id: randomUUID(), email, email_verified: true, username: null, given_name: null, family_name: null,
    name: 'Bootstrap administrator', nickname: null, role: 'superadmin', account_enabled: true, locked: false,
    locked_until: null, auth_provider: 'local', password_hash: await ctx.passwords.hash(password),
    mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null,
    deleted_at: null, created_at: now, updated_at: now, last_login_at: null,
  };
  const audit = ctx.audit.entry(PLATFORM_TENANT, { type: 'user.created', user_id: user.id, details: { user_id: user.id, role: user.role, source: 'bootstrap' } });
  try {
    await ctx.storage.users.create(PLATFORM_TENANT, user, audit);
  } catch (err) {
    if (err instanceof UniqueViolation) return; // created by a concurrent instance
    throw err;
  }
  ctx.log.info({ email, tenant: PLATFORM_TENANT }, 'bootstrap platform administrator created');
}
