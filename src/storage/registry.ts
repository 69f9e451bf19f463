/**
 * The tenant registry is platform data: its rows belong to the platform tenant `_platforms`
 * (tenant_id = REGISTRY_OWNER in migrations postgresql/003 and sqlite/005), so on PostgreSQL the
 * ordinary row-level security policy applies and only a transaction bound to `_platforms` sees it.
 */
export const REGISTRY_OWNER = '_platforms';

/** The table that is not a tenant's own data (skipped when a tenant's data is purged). */
export const REGISTRY_TABLE = 'tenants';

/**
 * The built-in tenants: `default` and `_ops` are hard-coded (no record), `_platforms` owns the
 * registry; none can be deleted. Their writes skip the PostgreSQL write guard (tenant-db.ts),
 * which checks a record that only the other tenants have.
 */
export const BUILT_IN_TENANTS: ReadonlySet<string> = new Set(['default', REGISTRY_OWNER, '_ops']);

/** The advisory lock a tenant's writes hold shared and its delete exclusive (migration 110). */
export const TENANT_LOCK_NAME = 'svc.tenant';
