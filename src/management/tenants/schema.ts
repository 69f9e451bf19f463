/**
 * Request and response schemas of the tenants resource (spec 2.8, 4.9, 8; CONTRACT.md tenant
 * object), shared by the Management API and the `/platform/*` routes. The field rules are the
 * tenants domain's (src/tenants/schema.ts).
 */
import { z } from 'zod';
import { pageQuery } from '../pagination.js';

import { TENANT_STATUSES } from '../../tenants/schema.js';

export { TENANT_STATUSES, tenantCreateSchema, tenantPatchSchema, tenantSlug, CREATE_SLUG_PATTERN, type TenantCreateInput, type TenantPatchInput } from '../../tenants/schema.js';

/** `q`: a case-insensitive substring of slug, display_name or domain (as the users and clients lists' `q`). */
export const tenantListQuery = z.object({
  ...pageQuery,
  status: z.enum(TENANT_STATUSES, { message: `must be one of ${TENANT_STATUSES.join(', ')}` }).optional(),
  q: z.string().max(200, 'must be at most 200 characters').optional(),
});

export const tenantResponse = z.object({
  id: z.string(),
  slug: z.string(),
  display_name: z.string(),
  domain: z.string().nullable(),
  status: z.enum(TENANT_STATUSES),
  created_at: z.string(),
  updated_at: z.string(),
});
