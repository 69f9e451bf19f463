/** The audit resource (spec 4.7, 2.6) and, from ./stats.js, the statistics and health endpoints. */
import { z } from 'zod';
import { notFound } from '../../http/problem.js';
import type { AuditEntry } from '../../storage/types.js';
import { op, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, sendJson, serializer } from '../respond.js';
import { auditEntryResponse, auditListQuery, auditStatsResponse } from './schema.js';
import { auditExportOperation } from './export.js';
import { auditTenantOf } from './scope.js';
import { statsOperations, utcDayStart } from './stats.js';

const one = serializer(dataEnvelope(auditEntryResponse));
const many = serializer(listEnvelope(auditEntryResponse));
const typesOut = serializer(dataEnvelope(z.array(z.string())));
const statsOut = serializer(dataEnvelope(auditStatsResponse));

/** Exactly the CONTRACT.md audit entry, whatever else a storage row carries. */
export function presentAuditEntry(e: AuditEntry) {
  return {
    id: e.id,
    type: e.type,
    status: e.status,
    username: e.username,
    user_id: e.user_id,
    client_id: e.client_id,
    ip_address: e.ip_address,
    user_agent: e.user_agent,
    tenant_id: e.tenant_id,
    details: e.details,
    timestamp: e.timestamp,
  };
}

// Registered as exact paths, /audit/types and /audit/stats win over /audit/:id in the router.
export const auditOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/audit', scope: 'svc:audit:read', rateClass: 'read', tag: 'audit', summary: 'List audit entries, newest first',
    query: auditListQuery,
    success: { status: 200, schema: listEnvelope(auditEntryResponse) },
    errors: [422],
    handler: async (call) => {
      const { limit, after, include_count, tenant: named, ...filter } = call.query;
      const tenant = await auditTenantOf(call, named);
      // The log read may be another tenant's (`tenant=`): its cursors are that log's.
      const cursors = call.cursors.of(tenant);
      const page = await call.ctx.storage.audit.list(tenant, filter, cursors.request('audit', { limit, after, include_count }));
      return sendJson(200, many(cursors.envelope('audit', page, (e) => [e.timestamp, e.id], presentAuditEntry)));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/audit/types', scope: 'svc:audit:read', rateClass: 'read', tag: 'audit', summary: 'Distinct audit entry types recorded in this tenant',
    success: { status: 200, schema: dataEnvelope(z.array(z.string())) },
    handler: async (call) => sendJson(200, typesOut({ data: await call.ctx.storage.audit.types(call.tenant) })),
  }),
  op({
    method: 'GET', path: '/api/v1/audit/stats', scope: 'svc:stats:read', rateClass: 'read', tag: 'audit', summary: 'Aggregate activity statistics (today = the current UTC day)',
    success: { status: 200, schema: dataEnvelope(auditStatsResponse) },
    handler: async (call) => sendJson(200, statsOut({ data: await call.ctx.storage.audit.stats(call.tenant, utcDayStart()) })),
  }),
  auditExportOperation,
  op({
    method: 'GET', path: '/api/v1/audit/:id', scope: 'svc:audit:read', rateClass: 'read', tag: 'audit', summary: 'Get an audit entry',
    success: { status: 200, schema: dataEnvelope(auditEntryResponse) },
    errors: [404],
    handler: async (call) => {
      const entry = await call.ctx.storage.audit.get(call.tenant, call.params.id);
      if (!entry) throw notFound(`Audit entry ${call.params.id} not found`);
      return sendJson(200, one({ data: presentAuditEntry(entry) }));
    },
  }),
  ...statsOperations,
];
