/**
 * The tenants resource (spec 4.9, CONTRACT.md): multi-tenant mode only, tokens of the `_platforms`
 * issuer only (Operation.platform; authenticate.ts). The lifecycle itself (keys at creation,
 * cache invalidation, actor eviction, purge on delete) is in tenancy/tenants.ts, shared with the
 * `/platform/*` routes. Audit entries go to `_platforms`, the tenant the calls run as.
 */
import { op, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { createTenant, deleteTenant, getTenant, presentTenant, updateTenant } from '../../tenants/operations.js';
import { tenantCreateSchema, tenantListQuery, tenantPatchSchema, tenantResponse } from './schema.js';

const CURSOR_SCOPE = 'tenants';
const one = serializer(dataEnvelope(tenantResponse));
const many = serializer(listEnvelope(tenantResponse));
const route = '/api/v1/tenants/:slug';

export const tenantOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/tenants', scope: 'svc:tenants:read', rateClass: 'read', tag: 'tenants', platform: true,
    summary: 'List tenants, filtered by status and a search (multi-tenant mode; `_platforms` tokens only)',
    query: tenantListQuery,
    success: { status: 200, schema: listEnvelope(tenantResponse) },
    handler: async (call) => {
      const { status, q, ...pq } = call.query;
      const page = await call.ctx.storage.tenants.list({ status, q }, call.cursors.request(CURSOR_SCOPE, pq));
      return sendJson(200, many(call.cursors.envelope(CURSOR_SCOPE, page, (t) => [t.created_at, t.id], presentTenant)));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/tenants', scope: 'svc:tenants:write', rateClass: 'write', tag: 'tenants', platform: true,
    summary: 'Create a tenant (its signing keys are generated at once)',
    body: tenantCreateSchema,
    success: { status: 201, schema: dataEnvelope(tenantResponse) },
    errors: [409, 422],
    handler: async (call) => {
      const record = await createTenant(call.ctx, call.body);
      await call.audit({ type: 'tenant.created', details: { tenant_id: record.id, slug: record.slug } });
      return sendJson(201, one({ data: presentTenant(record) }));
    },
  }),
  op({
    method: 'GET', path: route, scope: 'svc:tenants:read', rateClass: 'read', tag: 'tenants', platform: true,
    summary: 'Get a tenant',
    success: { status: 200, schema: dataEnvelope(tenantResponse) },
    handler: async (call) => sendJson(200, one({ data: presentTenant(await getTenant(call.ctx, call.params.slug)) })),
  }),
  op({
    method: 'PATCH', path: route, scope: 'svc:tenants:write', rateClass: 'write', tag: 'tenants', platform: true,
    summary: 'Change status (active, suspended), display_name or domain',
    body: tenantPatchSchema,
    success: { status: 200, schema: dataEnvelope(tenantResponse) },
    errors: [404, 409, 422],
    handler: async (call) => {
      const record = await updateTenant(call.ctx, call.params.slug, call.body);
      await call.audit({ type: 'tenant.updated', details: { tenant_id: record.id, slug: record.slug, fields: Object.keys(call.body), status: record.status } });
      return sendJson(200, one({ data: presentTenant(record) }));
    },
  }),
  op({
    method: 'DELETE', path: route, scope: 'svc:tenants:delete', rateClass: 'delete', tag: 'tenants', platform: true,
    summary: 'Delete a tenant and purge its data (reserved tenants: 409)',
    success: { status: 204 },
    errors: [404, 409],
    handler: async (call) => {
      const slug = call.params.slug;
      const record = await getTenant(call.ctx, slug).catch(() => undefined);
      await deleteTenant(call.ctx, slug);
      await call.audit({ type: 'tenant.deleted', details: { tenant_id: record?.id ?? null, slug, data_purged: true } });
      return noContent();
    },
  }),
];
