/**
 * Storage interfaces: the tenant registry and per-tenant configuration.
 * Imported through the index, ../types.ts, which also states the rules every repository follows.
 */
import type { Page, PageRequest, TenantId } from './common.js';

/** A tenant of multi-tenant mode (CONTRACT.md tenant object). `default` is never stored. */
export interface TenantRecord {
  id: string;
  slug: string;
  display_name: string;
  domain: string | null;
  status: 'active' | 'suspended';
  created_at: string;
  updated_at: string;
}

export interface TenantFilter {
  status?: TenantRecord['status'];
  /** Case-insensitive (ASCII) substring of slug, display_name or domain; LIKE wildcards match themselves. */
  q?: string;
}

/** The tenant registry: platform data, not owned by any one tenant. */
export interface TenantRepository {
  /** Throws UniqueViolation('slug') when the slug exists. */
  create(record: TenantRecord): Promise<void>;
  get(slug: string): Promise<TenantRecord | undefined>;
  list(filter: TenantFilter, page: PageRequest): Promise<Page<TenantRecord>>;
  update(slug: string, change: Partial<Pick<TenantRecord, 'display_name' | 'domain' | 'status'>>): Promise<TenantRecord | undefined>;
  /** Removes the record and purges every row of the tenant's data; false (nothing done) when unknown. */
  delete(slug: string): Promise<boolean>;
}

/** Per-tenant configuration overrides, one JSON object per section (spec 1.5). Sensitive fields arrive sealed. */
export interface TenantConfigRepository {
  /** Every stored section of the tenant ({} when none). */
  get(tenant: TenantId): Promise<Record<string, Record<string, unknown>>>;
  put(tenant: TenantId, section: string, data: Record<string, unknown>): Promise<void>;
}
