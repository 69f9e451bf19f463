/**
 * The tenant registry is platform data: its rows belong to the platform tenant `_platforms`
 * (tenant_id = REGISTRY_OWNER in migrations postgresql/003 and sqlite/005), so on PostgreSQL the
 * ordinary row-level security policy applies and only a transaction bound to `_platforms` sees it.
 */
export const REGISTRY_OWNER = '_platforms';

/** The table that is not a tenant's own data (skipped when a tenant's data is purged). */
export const REGISTRY_TABLE = 'tenants';
