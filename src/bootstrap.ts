/**
 * Start-up provisioning: the Management bootstrap client of CONTRACT.md, created once (idempotent)
 * in `default` (single-tenant) or `_platforms` (multi-tenant), with a warning on every start while
 * the variables stay set.
 */
import type { AppContext } from './context.js';
import { hashSecret } from './oidc/client-metadata.js';
import { MANAGEMENT_SCOPES } from './oidc/scopes.js';
import { createClient } from './management/clients/operations.js';
import { DEFAULT_TENANT, PLATFORM_TENANT } from './tenancy/resolver.js';

export async function ensureBootstrapClient(ctx: AppContext): Promise<void> {
  const { client_id: id, client_secret: secret } = ctx.config.svc.bootstrap;
  if (!id || !secret) return;
  const tenant = ctx.config.multi_tenancy.enabled ? PLATFORM_TENANT : DEFAULT_TENANT;
  ctx.log.warn({ client_id: id, tenant }, 'SVC_BOOTSTRAP_CLIENT_ID/SECRET are set: create a permanent management client and remove them');
  const existing = await ctx.storage.clients.get(tenant, id);
  if (existing) {
    // The configured secret is authoritative for the bootstrap client: follow it if it changed.
    if (existing.secret_hash !== hashSecret(secret)) {
      await ctx.storage.clients.update(tenant, id, { secret_hash: hashSecret(secret), bump_generation: true });
      ctx.log.warn({ client_id: id }, 'bootstrap client secret changed to the configured value');
    }
    return;
  }
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
    { clientId: id, secret },
  );
  await ctx.audit.record(tenant, { type: 'client.created', details: { client_id: id, source: 'bootstrap' } });
  ctx.log.info({ client_id: id, tenant }, 'bootstrap management client created');
}
