/**
 * The tenant fields the tenants domain accepts, whichever surface asks (Management API,
 * `/platform/*` routes, the CLI): slug, display name, custom domain, status.
 */
import { z } from 'zod';

/**
 * A new tenant's slug (spec 4.9): 2-63 characters, lowercase letters, digits and hyphens, not
 * starting or ending with a hyphen. Stricter than what request resolution accepts (`_` allowed
 * there), so every created tenant is also a valid DNS label for its subdomain.
 */
export const CREATE_SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])$/;

export const tenantSlug = z
  .string()
  .min(2, 'must be at least 2 characters')
  .max(63, 'must be at most 63 characters')
  .regex(CREATE_SLUG_PATTERN, 'must be lowercase letters, digits and hyphens, not starting or ending with a hyphen');

const displayName = z.string().trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters');

/** A custom domain: a lower-case host name (letters, digits, hyphens; at least two labels). */
const domain = z
  .string()
  .max(253, 'must be at most 253 characters')
  .regex(/^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'must be a lower-case host name such as login.example.com');

export const TENANT_STATUSES = ['active', 'suspended'] as const;

export const tenantCreateSchema = z.strictObject({
  slug: tenantSlug,
  display_name: displayName,
  domain: domain.nullable().optional(),
});
export type TenantCreateInput = z.output<typeof tenantCreateSchema>;

/** PATCH: the supplied fields only; `domain: null` removes the domain. */
export const tenantPatchSchema = z.strictObject({
  status: z.enum(TENANT_STATUSES, { message: `must be one of ${TENANT_STATUSES.join(', ')}` }).optional(),
  display_name: displayName.optional(),
  domain: domain.nullable().optional(),
});
export type TenantPatchInput = z.output<typeof tenantPatchSchema>;

