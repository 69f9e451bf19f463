/**
 * The resources resource (issue 19): a tenant's own APIs. A write is made live at once on this
 * instance (the actor reloads, so its provider and resource index are rebuilt) and on the others
 * through the tenant's config:changed event (section `resources`), like a configuration change.
 */
import { createResource, deleteResource, getResource, updateResource, type ResourceScope } from '../../resources/operations.js';
import type { ResourceRecord } from '../../storage/types.js';
import { configChanged } from '../../tenancy/config-changed.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { resourceCreateSchema, resourceListQuery, resourcePatchSchema, resourceResponse } from './schema.js';

const CURSOR_SCOPE = 'resources';
const one = serializer(dataEnvelope(resourceResponse));
const many = serializer(listEnvelope(resourceResponse));

const present = (r: ResourceRecord): Record<string, unknown> => ({ ...r });

/** The domain's view of a call (src/resources/operations.ts holds the rules). */
const scopeOf = (call: Call): ResourceScope => ({ repo: call.ctx.storage.resources, tenant: call.tenant, config: call.actor.config });

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
      const record = await createResource(scopeOf(call), call.body);
      await configChanged(call.ctx, call.tenant, 'resources', call.actor);
      await call.audit({ type: 'resource.created', details: { resource_id: record.id, identifier: record.identifier } });
      return sendJson(201, one({ data: present(record) }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/resources/:id', scope: 'svc:resources:read', rateClass: 'read', tag: 'resources', summary: 'Get an API resource',
    success: { status: 200, schema: dataEnvelope(resourceResponse) },
    handler: async (call) => sendJson(200, one({ data: present(await getResource(scopeOf(call), call.params.id)) })),
  }),
  op({
    method: 'PATCH', path: '/api/v1/resources/:id', scope: 'svc:resources:write', rateClass: 'write', tag: 'resources', summary: 'Change the supplied fields of an API resource (the identifier is fixed)',
    body: resourcePatchSchema,
    success: { status: 200, schema: dataEnvelope(resourceResponse) },
    errors: [422],
    handler: async (call) => {
      const { created_at: _c, updated_at: _u, ...patch } = call.body;
      const { record: updated, fields } = await updateResource(scopeOf(call), call.params.id, patch);
      await configChanged(call.ctx, call.tenant, 'resources', call.actor);
      await call.audit({ type: 'resource.updated', details: { resource_id: updated.id, fields } });
      return sendJson(200, one({ data: present(updated) }));
    },
  }),
  op({
    method: 'DELETE', path: '/api/v1/resources/:id', scope: 'svc:resources:delete', rateClass: 'delete', tag: 'resources', summary: 'Delete an API resource (its tokens stop being issued)',
    success: { status: 204 },
    handler: async (call) => {
      const id = call.params.id;
      await deleteResource(scopeOf(call), id);
      await configChanged(call.ctx, call.tenant, 'resources', call.actor);
      await call.audit({ type: 'resource.deleted', details: { resource_id: id } });
      return noContent();
    },
  }),
];
