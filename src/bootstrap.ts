/**
 * Start-up provisioning:
 * - multi-tenant mode: the `_platforms` tenant (record and signing keys), created at the first
 *   start and idempotently afterwards (concurrent instances race harmlessly), and its bootstrap
 *   administrator from SVC_BOOTSTRAP_ADMIN_EMAIL/PASSWORD (spec 1.5), role `superadmin`, created
 *   at the first start only: once provisioned (bootstrap-record.ts), a later start creates nothing,
 *   whatever became of it (deleted, e-mail or password changed), and warns that the variables are
 *   ignored;
 * - the Management bootstrap client of CONTRACT.md, created once (idempotent) in `default`
 *   (single-tenant) or `_platforms` (multi-tenant). The configured secret is followed on a later
 *   start only while the stored secret is still one the bootstrap wrote: a secret regenerated
 *   through the API (an operator does that because the configured one leaked) is never put back.
 * A warning is logged on every start while the variables stay set.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from './context.js';
import { ensureKeys } from './keys/keystore.js';
import { UniqueViolation } from './storage/errors.js';
import type { ClientRecord, UserRecord } from './storage/types.js';
import { hashRandomToken, hashSecret } from './clients/secrets.js';
import { MANAGEMENT_SCOPES } from './oidc/scopes.js';
import { createClient, isConfidential, setClientSecret, type ClientScope } from './clients/operations.js';
import { DEFAULT_TENANT, PLATFORM_TENANT } from './tenancy/resolver.js';
import { readAdminRecord, readClientSecretRecord, secretDigest, writeAdminRecord, writeClientSecretRecord } from './bootstrap-record.js';

export async function ensureBootstrapClient(ctx: AppContext): Promise<void> {
  const { client_id: id, client_secret: secret } = ctx.config.svc.bootstrap;
  if (!id || !secret) return;
  const tenant = ctx.config.multi_tenancy.enabled ? PLATFORM_TENANT : DEFAULT_TENANT;
  ctx.log.warn({ client_id: id, tenant }, 'SVC_BOOTSTRAP_CLIENT_ID/SECRET are set: create a permanent management client and remove them');
  const existing = await ctx.storage.clients.get(tenant, id);
  if (existing) {
    await followConfiguredSecret(ctx, tenant, existing, secret);
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
  await writeClientSecretRecord(ctx.storage.tenantConfig, tenant, id, hashSecret(secret));
  ctx.log.info({ client_id: id, tenant }, 'bootstrap management client created');
}

/**
 * The bootstrap client exists: its stored secret becomes the configured one only while the stored
 * one is the bootstrap's (the secret it recorded; a client stored before that record existed: one
 * whose secret was never regenerated, generation 0; or the configured secret hashed unkeyed by an
 * older version, rehashed here). A secret regenerated through the API is kept, with a warning.
 * The write is announced as any client change, so no instance keeps serving the old secret.
 */
async function followConfiguredSecret(ctx: AppContext, tenant: string, existing: ClientRecord, secret: string): Promise<void> {
  const id = existing.client_id;
  const configured = hashSecret(secret);
  const recorded = await readClientSecretRecord(ctx.storage.tenantConfig, tenant);
  if (existing.secret_hash === configured) {
    if (recorded?.client_id !== id || recorded.secret !== secretDigest(configured)) await writeClientSecretRecord(ctx.storage.tenantConfig, tenant, id, configured);
    return;
  }
  const stored = existing.secret_hash;
  const rehash = stored === hashRandomToken(secret);
  const bootstraps =
    stored !== null && isConfidential(existing.metadata) &&
    (rehash || (recorded ? recorded.client_id === id && recorded.secret === secretDigest(stored) : existing.secret_generation === 0));
  if (!bootstraps) {
    ctx.log.warn(
      { client_id: id, tenant },
      `SVC_BOOTSTRAP_CLIENT_SECRET is ignored: the bootstrap client's secret was changed through the Management API since start-up set it; rotate it with POST /api/v1/clients/${id}/secret and remove the variable`,
    );
    return;
  }
  const scope: ClientScope = { ctx, tenant, cache: { invalidateClient: (clientId) => ctx.tenantStates.invalidateClient(tenant, clientId) } };
  const updated = await setClientSecret(scope, existing, secret, { source: 'bootstrap' });
  if (updated.secret_hash) await writeClientSecretRecord(ctx.storage.tenantConfig, tenant, id, updated.secret_hash);
  ctx.log.warn({ client_id: id }, rehash ? 'bootstrap client secret rehashed under the server key' : 'bootstrap client secret changed to the configured value');
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

/**
 * The bootstrap administrator of `_platforms` (spec 1.5), multi-tenant mode only: created at the
 * first start. The record written then (bootstrap-record.ts) ends it for good: a later start
 * creates nothing although the administrator may have been deleted or given another e-mail
 * (which would otherwise bring back a second `superadmin` with the configured password).
 * Instances starting together on an empty database create one: the e-mail is unique per tenant.
 */
export async function ensureBootstrapAdmin(ctx: AppContext): Promise<void> {
  const { admin_email: email, admin_password: password } = ctx.config.svc.bootstrap;
  if (!email || !password) return;
  if (!ctx.config.multi_tenancy.enabled) {
    // Spec 1.5: the bootstrap path runs only in multi-tenant mode. Set here they do nothing, and
    // say so on every start, as the variables do in multi-tenant mode.
    ctx.log.warn({ email }, 'SVC_BOOTSTRAP_ADMIN_EMAIL/PASSWORD are set but ignored: they create the _platforms administrator in multi-tenant mode only; in single-tenant mode create an administrator with `svc users create --role admin`, and remove them');
    return;
  }
  const repo = ctx.storage.tenantConfig;
  const done = await readAdminRecord(repo, PLATFORM_TENANT);
  if (done) {
    ctx.log.warn({ email, tenant: PLATFORM_TENANT, provisioned_at: done.at }, 'SVC_BOOTSTRAP_ADMIN_EMAIL/PASSWORD are set but ignored: the bootstrap platform administrator was created at the first start and is never created again; remove them');
    return;
  }
  ctx.log.warn({ email, tenant: PLATFORM_TENANT }, 'SVC_BOOTSTRAP_ADMIN_EMAIL/PASSWORD are set: create a permanent platform administrator and remove them');
  const found = await ctx.storage.users.findByEmail(PLATFORM_TENANT, email);
  if (found) {
    // Created by an earlier version, or by this code before the record could be written.
    await writeAdminRecord(repo, PLATFORM_TENANT, found.id);
    return;
  }
  // A database provisioned before the record existed, whose administrator was since removed or
  // renamed: `_platforms` has users, so this is not the first start.
  if ((await ctx.storage.users.count(PLATFORM_TENANT)) > 0) {
    await writeAdminRecord(repo, PLATFORM_TENANT, null);
    return;
  }
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
    if (err instanceof UniqueViolation) return; // created (and recorded) by a concurrent instance
    throw err;
  }
  await writeAdminRecord(repo, PLATFORM_TENANT, user.id);
  ctx.log.info({ email, tenant: PLATFORM_TENANT }, 'bootstrap platform administrator created');
}
