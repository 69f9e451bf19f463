/**
 * `GET /api/v1/audit/export`: the entries the list would page through for the same filter, as one
 * CSV document (src/audit/csv.ts), newest first, streamed page by page so a large log is never
 * held in memory and the first bytes leave at once. Same scope and rate class as the list.
 */
import { z } from 'zod';
import { auditCsvHeader, auditCsvRow } from '../../audit/csv.js';
import type { AuditFilter, PageRequest } from '../../storage/types.js';
import { op } from '../operation.js';
import type { Call } from '../operation.js';
import { auditFilterQuery } from './schema.js';
import { auditTenantOf } from './scope.js';

/** Rows read per storage round trip while streaming. */
const EXPORT_PAGE = 500;

async function* rows(call: Call, tenant: string, filter: AuditFilter): AsyncGenerator<string> {
  yield auditCsvHeader();
  let after: PageRequest['after'];
  for (;;) {
    const page = await call.ctx.storage.audit.list(tenant, filter, { limit: EXPORT_PAGE, after, include_count: false });
    if (page.items.length > 0) yield page.items.map(auditCsvRow).join('');
    const last = page.items[page.items.length - 1];
    if (!page.has_more || !last) return;
    after = { created_at: last.timestamp, id: last.id };
  }
}

export const auditExportOperation = op({
  method: 'GET', path: '/api/v1/audit/export', scope: 'svc:audit:read', rateClass: 'read', tag: 'audit',
  summary: 'Export the audit entries of a filter as CSV (text/csv, streamed; cells starting with =, +, -, @ are prefixed with an apostrophe)',
  query: auditFilterQuery,
  success: { status: 200, schema: z.string(), contentType: 'text/csv', description: 'CSV with a header row (id, timestamp, type, status, username, user_id, client_id, ip_address, user_agent, tenant_id, details as JSON), one row per entry, newest first' },
  errors: [422],
  handler: async (call) => {
    // Same tenant rule as the list (cross-tenant reading with a `_platforms` token), decided before the head is sent.
    const { tenant: named, ...filter } = call.query;
    const tenant = await auditTenantOf(call as Call, named);
    const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-');
    return {
      status: 200,
      headers: {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="audit-${tenant.replace(/[^a-z0-9_-]/g, '')}-${stamp}.csv"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      },
      stream: rows(call as Call, tenant, filter),
    };
  },
});
