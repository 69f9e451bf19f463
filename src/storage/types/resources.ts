/**
 * Storage interfaces: API resources.
 * Imported through the index, ../types.ts, which also states the rules every repository follows.
 */
import type { Page, PageRequest, TenantId } from './common.js';

/** A scope an API resource defines (issue 19). */
export interface ResourceScope {
  name: string;
  description: string;
}

/** A tenant's own API (CONTRACT.md "API resources"): a token audience besides urn:svc:api:v1. */
export interface ResourceRecord {
  id: string;
  /** Absolute URI, unique within the tenant; the `aud` of its access tokens. */
  identifier: string;
  name: string;
  scopes: ResourceScope[];
  token_format: 'jwt' | 'opaque';
  /** Seconds; never above the tenant ceiling (86400). */
  access_token_ttl: number;
  signing_alg: string;
  /** Puts the user's `roles` claim in this resource's access tokens even without the `roles` scope. */
  include_roles: boolean;
  created_at: string;
  updated_at: string;
}

export type ResourceChange = Partial<Pick<ResourceRecord, 'name' | 'scopes' | 'token_format' | 'access_token_ttl' | 'signing_alg' | 'include_roles'>> & { updated_at: string };

export interface ResourceRepository {
  /** Throws UniqueViolation('identifier') when the tenant already has a resource with that identifier. */
  create(tenant: TenantId, record: ResourceRecord): Promise<void>;
  get(tenant: TenantId, id: string): Promise<ResourceRecord | undefined>;
  list(tenant: TenantId, page: PageRequest): Promise<Page<ResourceRecord>>;
  /** Every resource of the tenant, oldest first (the token endpoint's index; bounded by the API). */
  all(tenant: TenantId): Promise<ResourceRecord[]>;
  count(tenant: TenantId): Promise<number>;
  update(tenant: TenantId, id: string, change: ResourceChange): Promise<ResourceRecord | undefined>;
  delete(tenant: TenantId, id: string): Promise<boolean>;
}
