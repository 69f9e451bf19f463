/**
 * The resources resource (issue 19): a tenant's own APIs. A write is made live at once on this
 * instance (the actor reloads, so its provider and resource index are rebuilt) and on the others
 * through the tenant's config:changed event (section `resources`), like a configuration change.
 */
import { randomBytes } from 'node:crypto';
import { configChangedChannel, type ConfigChangedEvent } from '../../events/bus.js';
import { conflict, notFound, validation } from '../../http/problem.js';
import { UniqueViolation } from '../../storage/errors.js';
import type { ResourceChange, ResourceRecord } from '../../storage/types.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { resourceCreateSchema, resourceListQuery, resourcePatchSchema, resourceResponse } from './schema.js';

const CURSOR_SCOPE = 'resources';
/** Resources per tenant: the token endpoint keeps them all in memory per live tenant. */
export const MAX_RESOURCES_PER_TENANT = 100;
const one = serializer(dataEnvelope(resourceResponse));
const many = serializer(listEnvelope(resourceResponse));

const present = (r: ResourceRecord): Record<string, unknown> => ({ ...r });

async function mustGet(call: Call, id: string): Promise<ResourceRecord> {
  const record = await call.ctx.storage.resources.get(call.tenant, id);
  if (!record) throw notFound(`Resource ${id} not found`);
  return record;
}

/** The algorithm must be one the tenant's key store signs with, or tokens could not be issued. */
function checkAlg(call: Call, alg: string | undefined): void {
  const algs: readonly string[] = call.actor.config.security.key_store.algorithms;
  if (alg !== undefined && !algs.includes(alg)) throw validation([{ field: 'signing_alg', message: `must be one of ${algs.join(', ')} (the tenant's signing algorithms)` }]);
}

async function resourcesChanged(call: Call): Promise<void> {
  const { ctx, tenant } = call;
  try {
    await call.actor.reload();
  } catch (err) {
    ctx.log.error({ err, tenant }, 'resource change could not be applied to the local actor');
  }
  const event: ConfigChangedEvent = { tenant, section: 'resources', at: new Date().toISOString() };
  try {
    await ctx.events.publish(configChangedChannel(tenant, ctx.config.redis.key_prefix), event);
  } catch (err) {
    ctx.log.warn({ err, tenant }, 'config:changed event (resources) could not be published');
  }
}

export const resourceOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/resources', scope: 'svc:resources:read', rateClass: 'read', tag: 'resources', summary: 'List API resources',
    query: resourceListQuery,
    success: { status: 200, schema: listEnvelope(resourceResponse) },
    handler: async (call) => {
      const page = await call.ctx.storage.resources.list(call.tenant, call.cursors.request(CURSOR_SCOPE, call.query));
      return sendJson(200, many(call.cursors.envelope(CURSOR_SCOPE, page, (r) => [r.created_at, r.id], present)));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/resources', scope: 'svc:resources:write', rateClass: 'write', tag: 'resources', summary: 'Create an API resource',
    body: resourceCreateSchema,
    success: { status: 201, schema: dataEnvelope(resourceResponse) },
    errors: [409, 422],
    handler: async (call) => {
      const b = call.body;
      checkAlg(call, b.signing_alg);
      if ((await call.ctx.storage.resources.count(call.tenant)) >= MAX_RESOURCES_PER_TENANT) {
        throw validation([{ field: 'body', message: `a tenant has at most ${MAX_RESOURCES_PER_TENANT} resources` }]);
      }
      const now = new Date().toISOString();
      const record: ResourceRecord = {
        id: randomBytes(16).toString('base64url'),
        identifier: b.identifier,
        name: b.name,
        scopes: b.scopes,
        token_format: b.token_format,
        access_token_ttl: b.access_token_ttl ?? call.actor.config.oidc.ttl.access_token,
        signing_alg: b.signing_alg ?? call.actor.config.security.key_store.algorithms[0]!,
        include_roles: b.include_roles,
        created_at: now,
        updated_at: now,
      };
      try {
        await call.ctx.storage.resources.create(call.tenant, record);
      } catch (err) {
        if (err instanceof UniqueViolation && err.field === 'identifier') throw conflict('A resource with this identifier already exists');
        throw err;
      }
      await resourcesChanged(call);
      await call.audit({ type: 'resource.created', details: { resource_id: record.id, identifier: record.identifier } });
      return sendJson(201, one({ data: present(record) }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/resources/:id', scope: 'svc:resources:read', rateClass: 'read', tag: 'resources', summary: 'Get an API resource',
    success: { status: 200, schema: dataEnvelope(resourceResponse) },
    handler: async (call) => sendJson(200, one({ data: present(await mustGet(call, call.params.id)) })),
  }),
  op({
    method: 'PATCH', path: '/api/v1/resources/:id', scope: 'svc:resources:write', rateClass: 'write', tag: 'resources', summary: 'Change the supplied fields of an API resource (the identifier is fixed)',
    body: resourcePatchSchema,
    success: { status: 200, schema: dataEnvelope(resourceResponse) },
    errors: [422],
    handler: async (call) => {
      const existing = await mustGet(call, call.params.id);
      const { identifier, id: _id, created_at: _c, updated_at: _u, ...fields } = call.body;
      if (identifier !== undefined && identifier !== existing.identifier) {
        throw validation([{ field: 'identifier', message: 'cannot be changed (tokens and grants name it); create another resource' }]);
      }
      checkAlg(call, fields.signing_alg);
      const change: ResourceChange = { ...fields, updated_at: new Date().toISOString() };
      const updated = await call.ctx.storage.resources.update(call.tenant, existing.id, change);
      if (!updated) throw notFound(`Resource ${existing.id} not found`);
      await resourcesChanged(call);
      await call.audit({ type: 'resource.updated', details: { resource_id: updated.id, fields: Object.keys(fields).filter((k) => fields[k as keyof typeof fields] !== undefined) } });
      return sendJson(200, one({ data: present(updated) }));
    },
  }),
  op({
    method: 'DELETE', path: '/api/v1/resources/:id', scope: 'svc:resources:delete', rateClass: 'delete', tag: 'resources', summary: 'Delete an API resource (its tokens stop being issued)',
    success: { status: 204 },
    handler: async (call) => {
      const id = call.params.id;
      if (!(await call.ctx.storage.resources.delete(call.tenant, id))) throw notFound(`Resource ${id} not found`);
      await resourcesChanged(call);
      await call.audit({ type: 'resource.deleted', details: { resource_id: id } });
      return noContent();
    },
  }),
];
