/** The clients resource (spec 4.3). */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { clientChangedChannel, type ClientChangedEvent } from '../../events/bus.js';
import { notFound, validation } from '../../http/problem.js';
import { hashSecret, newClientSecret } from '../../oidc/client-metadata.js';
import type { ClientMetadata, ClientRecord } from '../../storage/types.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { assertMayConfigureClient, heldScopes } from '../../clients/escalation.js';
import { buildMetadata } from './rules.js';
import { clientCreateSchema, clientListQuery, clientPatchSchema, clientPutSchema, clientResponse, clientStatsResponse } from './schema.js';

const one = serializer(dataEnvelope(clientResponse));
const many = serializer(listEnvelope(clientResponse));
const secretOut = serializer(dataEnvelope(z.object({ client_id: z.string(), client_secret: z.string() })));
const statsOut = serializer(dataEnvelope(clientStatsResponse));

export function presentClient(r: ClientRecord, secret?: string): Record<string, unknown> {
  return { ...r.metadata, client_id: r.client_id, active: r.active, created_at: r.created_at, updated_at: r.updated_at, ...(secret ? { client_secret: secret } : {}) };
}

function isConfidential(m: ClientMetadata): boolean {
  return m.token_endpoint_auth_method !== 'none';
}

/** Hash for every confidential client; sealed copy only where HMAC needs the raw secret. */
function secretColumns(call: Call, clientId: string, m: ClientMetadata, secret: string | undefined) {
  if (!secret) return { secret_hash: null, secret_sealed: null };
  return {
    secret_hash: hashSecret(secret),
    secret_sealed: m.token_endpoint_auth_method === 'client_secret_jwt' ? call.ctx.sealer.seal(secret, `${call.tenant}:client:${clientId}`) : null,
  };
}

/**
 * After a write: this instance's actor drops the client at once, and every other instance drops it
 * on the tenant's client:changed event (their caches would otherwise serve it for up to 30 s). The
 * write is committed; an event that cannot be published is logged, not failed: instances that miss
 * it read the client again when their cache entry ends or their event bus reconnects.
 */
async function clientChanged(call: Call, clientId: string): Promise<void> {
  call.actor.invalidateClient(clientId);
  const event: ClientChangedEvent = { tenant: call.tenant, client_id: clientId, at: new Date().toISOString() };
  try {
    await call.ctx.events.publish(clientChangedChannel(call.tenant, call.ctx.config.redis.key_prefix), event);
  } catch (err) {
    call.ctx.log.warn({ err, tenant: call.tenant, client_id: clientId }, 'client:changed event could not be published');
  }
}

async function mustGet(call: Call, clientId: string): Promise<ClientRecord> {
  const record = await call.ctx.storage.clients.get(call.tenant, clientId);
  if (!record) throw notFound(`Client ${clientId} not found`);
  return record;
}

/** Creates a client; shared by the API, dynamic registration and the CLI/bootstrap. */
export async function createClient(
  deps: Pick<Call, 'ctx' | 'tenant'>,
  metadata: ClientMetadata,
  opts: { clientId?: string; secret?: string } = {},
): Promise<{ record: ClientRecord; secret?: string }> {
  const clientId = opts.clientId ?? randomBytes(16).toString('base64url');
  const secret = isConfidential(metadata) ? (opts.secret ?? newClientSecret()) : undefined;
  const now = new Date().toISOString();
  const record: ClientRecord = {
    client_id: clientId,
    ...secretColumns(deps as Call, clientId, metadata, secret),
    secret_generation: 0,
    metadata,
    active: true,
    created_at: now,
    updated_at: now,
    last_used_at: null,
    tokens_issued: 0,
  };
  await deps.ctx.storage.clients.create(deps.tenant, record);
  return { record, secret };
}

async function replace(call: Call<unknown, z.output<typeof clientPatchSchema>>, mode: 'put' | 'patch') {
  const existing = await mustGet(call, call.params.client_id!);
  const metadata = buildMetadata(call.body, mode === 'patch' ? existing.metadata : undefined, call.ctx.config);
  // Hole 3: changing a client (even fields other than scope: its redirect URIs, its keys) is
  // taking it over; the caller must hold every svc:* scope the client is and will be allowed.
  assertMayConfigureClient(`${existing.metadata.scope ?? ''} ${metadata.scope ?? ''}`, heldScopes(call.claims.scope));
  const change: Parameters<typeof call.ctx.storage.clients.update>[2] = { metadata };
  // A client that became confidential has no secret until POST /secret; one that became public loses it.
  if (!isConfidential(metadata)) Object.assign(change, { secret_hash: null, secret_sealed: null });
  const updated = await call.ctx.storage.clients.update(call.tenant, existing.client_id, change);
  if (!updated) throw notFound(`Client ${existing.client_id} not found`);
  await clientChanged(call, updated.client_id);
  const changed = Object.keys(call.body).filter((k) => k in metadata);
  await call.audit({ type: 'client.updated', details: { client_id: updated.client_id, fields: changed, method: mode.toUpperCase() } });
  return sendJson(200, one({ data: presentClient(updated) }));
}

async function setActive(call: Call, active: boolean) {
  const existing = await mustGet(call, call.params.client_id!);
  // Deactivation also ends every token issued so far: reactivating does not bring them back.
  const change = active ? { active } : { active, bump_generation: true };
  const updated = existing.active === active ? existing : await call.ctx.storage.clients.update(call.tenant, existing.client_id, change);
  if (!updated) throw notFound(`Client ${existing.client_id} not found`);
  await clientChanged(call, updated.client_id);
  await call.audit({ type: active ? 'client.activated' : 'client.deactivated', details: { client_id: updated.client_id } });
  return sendJson(200, one({ data: presentClient(updated) }));
}

export const clientOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/clients', scope: 'svc:clients:read', rateClass: 'read', tag: 'clients', summary: 'List clients',
    query: clientListQuery,
    success: { status: 200, schema: listEnvelope(clientResponse) },
    handler: async (call) => {
      const { application_type, active, q, ...pq } = call.query;
      const page = await call.ctx.storage.clients.list(call.tenant, { application_type, active, q }, call.cursors.request('clients', pq));
      return sendJson(200, many(call.cursors.envelope('clients', page, (r) => [r.created_at, r.client_id], (r) => presentClient(r))));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/clients', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Create a client (the secret is returned once)',
    body: clientCreateSchema,
    success: { status: 201, schema: dataEnvelope(clientResponse) },
    handler: async (call) => {
      const metadata = buildMetadata(call.body, undefined, call.ctx.config);
      assertMayConfigureClient(metadata.scope, heldScopes(call.claims.scope));
      const { record, secret } = await createClient(call, metadata);
      await call.audit({ type: 'client.created', details: { client_id: record.client_id, client_name: metadata.client_name } });
      return sendJson(201, one({ data: presentClient(record, secret) }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/clients/:client_id', scope: 'svc:clients:read', rateClass: 'read', tag: 'clients', summary: 'Get a client',
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: async (call) => sendJson(200, one({ data: presentClient(await mustGet(call, call.params.client_id!)) })),
  }),
  op({
    method: 'PUT', path: '/api/v1/clients/:client_id', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Replace all mutable fields (omitted ones are cleared)',
    body: clientPutSchema,
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: (call) => replace(call, 'put'),
  }),
  op({
    method: 'PATCH', path: '/api/v1/clients/:client_id', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Change the supplied fields only',
    body: clientPatchSchema,
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: (call) => replace(call, 'patch'),
  }),
  op({
    method: 'DELETE', path: '/api/v1/clients/:client_id', scope: 'svc:clients:delete', rateClass: 'delete', tag: 'clients', summary: 'Delete a client',
    success: { status: 204 },
    handler: async (call) => {
      const id = call.params.client_id!;
      if (!(await call.ctx.storage.clients.delete(call.tenant, id))) throw notFound(`Client ${id} not found`);
      await clientChanged(call, id);
      await call.audit({ type: 'client.deleted', details: { client_id: id } });
      return noContent();
    },
  }),
  op({
    method: 'POST', path: '/api/v1/clients/:client_id/activate', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Activate a client',
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: (call) => setActive(call, true),
  }),
  op({
    method: 'POST', path: '/api/v1/clients/:client_id/deactivate', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Deactivate a client (its tokens stop working)',
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: (call) => setActive(call, false),
  }),
  op({
    method: 'POST', path: '/api/v1/clients/:client_id/secret', scope: 'svc:clients:delete', rateClass: 'sensitive', tag: 'clients', summary: 'Regenerate the secret (the old one is invalid at once)',
    success: { status: 200, schema: dataEnvelope(z.object({ client_id: z.string(), client_secret: z.string() })) },
    errors: [422],
    handler: async (call) => {
      const existing = await mustGet(call, call.params.client_id!);
      // The new secret is handed to the caller: as good as creating the client (hole 3).
      assertMayConfigureClient(existing.metadata.scope, heldScopes(call.claims.scope));
      if (!isConfidential(existing.metadata)) {
        throw validation([{ field: 'token_endpoint_auth_method', message: 'public clients have no secret' }]);
      }
      const secret = newClientSecret();
      const updated = await call.ctx.storage.clients.update(call.tenant, existing.client_id, {
        ...secretColumns(call, existing.client_id, existing.metadata, secret),
        bump_generation: true,
      });
      if (!updated) throw notFound(`Client ${existing.client_id} not found`);
      await clientChanged(call, existing.client_id);
      await call.audit({ type: 'client.secret_rotated', details: { client_id: existing.client_id } });
      return sendJson(200, secretOut({ data: { client_id: existing.client_id, client_secret: secret } }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/clients/:client_id/stats', scope: 'svc:clients:read', rateClass: 'read', tag: 'clients', summary: 'Usage statistics of a client',
    success: { status: 200, schema: dataEnvelope(clientStatsResponse) },
    handler: async (call) => {
      // Write the batched usage counters first, so tokens_issued and last_used_at agree at any moment.
      await call.actor.flushUsage();
      const record = await mustGet(call, call.params.client_id!);
      const id = record.client_id;
      const [sessions, grants] = await Promise.all([
        call.ctx.storage.oidc.listSessions(call.tenant, { clientId: id }),
        call.ctx.storage.oidc.listByModel(call.tenant, 'Grant'),
      ]);
      const activeSessions = sessions.length;
      const activeGrants = grants.filter((g) => g.payload.clientId === id).length;
      return sendJson(200, statsOut({
        data: {
          client_id: id,
          tokens_issued: record.tokens_issued + call.actor.pendingUsage(id),
          active_sessions: activeSessions,
          active_grants: activeGrants,
          last_used_at: record.last_used_at,
        },
      }));
    },
  }),
];
