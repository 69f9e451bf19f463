/** Audit API shapes (spec 2.6, 4.7; CONTRACT.md audit entry). */
import { z } from 'zod';
import { pageQuery } from '../pagination.js';
import { canonicalIp } from './scope.js';

export const AUDIT_STATUSES = ['success', 'failed', 'info', 'warning'] as const;

export const auditEntryResponse = z.object({
  id: z.string(),
  type: z.string(),
  status: z.enum(AUDIT_STATUSES),
  username: z.string().nullable(),
  user_id: z.string().nullable(),
  client_id: z.string().nullable(),
  ip_address: z.string().nullable(),
  user_agent: z.string().nullable(),
  tenant_id: z.string(),
  details: z.record(z.string(), z.unknown()),
  timestamp: z.string(),
});

export const auditStatsResponse = z.object({
  totalActivities: z.number(),
  uniqueUsers: z.number(),
  todayCount: z.number(),
  successfulLogins: z.number(),
  failedLogins: z.number(),
});

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const INSTANT_MESSAGE = 'must be an ISO 8601 date-time with a time zone (2024-05-01T12:00:00Z) or a date (2024-05-01)';

/**
 * A range bound as the stored form (UTC, milliseconds) so it compares as a string. A date alone
 * means the start of that UTC day for `from` and its last millisecond for `to`, so
 * from=2024-05-01&to=2024-05-01 is the whole day.
 */
const instant = (edge: 'start' | 'end') =>
  z
    .string()
    .max(64)
    .refine((v) => z.iso.datetime({ offset: true }).safeParse(v).success || z.iso.date().safeParse(v).success, INSTANT_MESSAGE)
    .transform((v) => (DATE_ONLY.test(v) ? `${v}T${edge === 'start' ? '00:00:00.000' : '23:59:59.999'}Z` : new Date(v).toISOString()));

const auditFilterFields = {
  type: z.string().min(1).max(100).optional(),
  status: z.enum(AUDIT_STATUSES).optional(),
  username: z.string().min(1).max(255).optional(),
  client_id: z.string().min(1).max(255).optional(),
  ip_address: z
    .string()
    .max(64)
    .transform((v, ctx) => canonicalIp(v) ?? (ctx.addIssue({ code: 'custom', message: 'must be an IPv4 or IPv6 address' }), z.NEVER))
    .optional(),
  from: instant('start').optional(),
  to: instant('end').optional(),
};

export const auditListQuery = z
  .object({
    ...pageQuery,
    ...auditFilterFields,
    // Cross-tenant reading with a _platforms token (scope.ts).
    tenant: z.string().min(1).max(63).optional(),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { path: ['from'], message: 'must not be later than to' });

/** The list's filters without paging: the CSV export (export.ts). */
export const auditFilterQuery = z
  .object({ ...auditFilterFields, tenant: z.string().min(1).max(63).optional() })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { path: ['from'], message: 'must not be later than to' });
