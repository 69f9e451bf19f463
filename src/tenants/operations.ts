/**
 * Tenant lifecycle, shared by the Tenants Management API and the `/platform/*` routes: create
 * (record + signing keys at once), update (status, display name, domain), delete (record and
 * data purged). Every change invalidates the registry cache and is announced to the other
 * instances (registry.ts), which evict the tenant's actor when it was suspended or deleted.
 *
 * Reserved tenants: `default` and `_ops` are not records (hard-coded), so they cannot be read,
 * changed or deleted here (404 / 409); `_platforms` is a record that can be renamed but neither
 * suspended nor deleted (409), since that would lock out the platform's own administrators.
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.js';
import { Conflict, Invalid, NotFound } from '../errors.js';
import { ensureKeys } from '../keys/keystore.js';
import { UniqueViolation } from '../storage/errors.js';
import { purgeTenantKeys } from '../storage/redis/purge.js';
import type { TenantRecord } from '../storage/types.js';
import { DEFAULT_TENANT, OPS_TENANT, PLATFORM_TENANT, RESERVED_TENANTS } from '../tenancy/resolver.js';

export interface TenantCreate {
  slug: string;
  display_name: string;
  domain?: string | null;
}

export interface TenantChange {
  status?: TenantRecord['status'];
  display_name?: string;
  domain?: string | null;
}

type Deps = Pick<AppContext, 'storage' | 'sealer' | 'config' | 'registry' | 'redis' | 'log'>;

/** The CONTRACT.md tenant object. */
export function presentTenant(r: TenantRecord) {
  return { id: r.id, slug: r.slug, display_name: r.display_name, domain: r.domain, status: r.status, created_at: r.created_at, updated_at: r.updated_at };
}

function uniqueToConflict(err: unknown, slug: string): never {
  if (err instanceof UniqueViolation) {
    throw new Conflict(err.field === 'domain' ? 'Another tenant already uses this domain' : `Tenant ${slug} already exists`);
  }
  throw err;
}

/** 404 for a name that is not a stored tenant (including the hard-coded `default` and `_ops`). */
export async function getTenant(deps: Deps, slug: string): Promise<TenantRecord> {
  const record = slug === DEFAULT_TENANT || slug === OPS_TENANT ? undefined : await deps.storage.tenants.get(slug);
  if (!record) throw new NotFound(`Tenant ${slug} not found`);
  return record;
}

/**
 * A custom domain must not be one of this service's own hosts: the base host and its subdomains
 * name tenants (`<slug>.<base host>`), so a tenant recording `acme.<base host>` would claim another
 * tenant's address.
 */
function refuseServiceHost(deps: Deps, domain: string | null | undefined): void {
  if (!domain) return;
  const base = new URL(deps.config.base_url).hostname.toLowerCase();
  if (domain === base || domain.endsWith(`.${base}`)) {
    throw new Invalid([{ field: 'domain', message: `must not be ${base} or one of its subdomains, which name this service's tenants` }]);
  }
}

export async function createTenant(deps: Deps, input: TenantCreate): Promise<TenantRecord> {
  if (RESERVED_TENANTS.has(input.slug)) throw new Invalid([{ field: 'slug', message: `${input.slug} is a reserved tenant name` }]);
  refuseServiceHost(deps, input.domain);
  const now = new Date().toISOString();
  const record: TenantRecord = {
    id: randomUUID(),
    slug: input.slug,
    display_name: input.display_name,
    domain: input.domain ?? null,
    status: 'active',
    created_at: now,
    updated_at: now,
  };
  // The repository purges what a deleted tenant of this slug may have left in SQL; Redis too.
  await deps.storage.tenants.create(record).catch((err: unknown) => uniqueToConflict(err, record.slug));
  await purgeRedis(deps, record.slug);
  await provisionKeys(deps, record.slug);
  await deps.registry.changed({ tenant: record.slug, change: 'created', status: record.status, at: now });
  return record;
}

/**
 * The tenant's signing keys, generated now so its JWKS is ready before the first request. Not
 * fatal: the tenant exists, and its actor generates missing keys on first use anyway.
 */
async function provisionKeys(deps: Deps, slug: string): Promise<void> {
  try {
    await ensureKeys(deps.storage.keys, slug, deps.config.security.key_store.algorithms, deps.sealer);
  } catch (err) {
    deps.log.warn({ err, tenant: slug }, 'signing keys of the new tenant could not be generated yet; they will be on first use');
  }
}

export async function updateTenant(deps: Deps, slug: string, change: TenantChange): Promise<TenantRecord> {
  if (slug === DEFAULT_TENANT || slug === OPS_TENANT) throw new Conflict(`${slug} is a reserved tenant and cannot be changed`);
  if (slug === PLATFORM_TENANT && change.status === 'suspended') throw new Conflict(`${PLATFORM_TENANT} cannot be suspended`);
  refuseServiceHost(deps, change.domain);
  const updated = await deps.storage.tenants.update(slug, change).catch((err: unknown) => uniqueToConflict(err, slug));
  if (!updated) throw new NotFound(`Tenant ${slug} not found`);
  await deps.registry.changed({ tenant: slug, change: 'updated', status: updated.status, at: updated.updated_at });
  return updated;
}

/**
 * Deletes the tenant and purges its data (SQL rows in one transaction, then its Redis keys). A
 * slug freed this way can be created again and starts empty: a new organisation must never
 * inherit the users, clients or keys of a deleted one. On PostgreSQL a write that raced the
 * deletion either committed before it (and is purged with the rest) or fails with TenantGone, a
 * 404 (the write guard, storage/postgresql/tenant-db.ts).
 * Redis keys written after the purge by a request already past the resolver (an OIDC artefact, a
 * counter) are left: they lie under a slug that no longer resolves, expire by their TTL, and are
 * purged when the slug is created again (docs/decisions.md "Tenant delete against writes in flight").
 */
export async function deleteTenant(deps: Deps, slug: string): Promise<void> {
  if (RESERVED_TENANTS.has(slug)) throw new Conflict(`${slug} is a reserved tenant and cannot be deleted`);
  if (!(await deps.storage.tenants.delete(slug))) throw new NotFound(`Tenant ${slug} not found`);
  await deps.registry.changed({ tenant: slug, change: 'deleted', status: null, at: new Date().toISOString() });
  await purgeRedis(deps, slug);
}

async function purgeRedis(deps: Deps, slug: string): Promise<void> {
  if (!deps.redis) return;
  try {
    await purgeTenantKeys(deps.redis.client, deps.config.redis.key_prefix, slug);
  } catch (err) {
    // What is left in Redis expires by itself (artefacts of a slug that no longer resolves, or that
    // a re-created tenant would find only by their random ids).
    deps.log.warn({ err, tenant: slug }, 'Redis keys of the tenant could not be purged; they expire by themselves');
  }
}
