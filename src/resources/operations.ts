/**
 * The resources domain's rules (issue 19: a tenant's own APIs), for every surface: at most
 * MAX_RESOURCES_PER_TENANT, a signing algorithm the tenant's key store has, an identifier fixed at
 * creation and unique in the tenant. Refusals are the neutral errors of src/errors.ts; making a
 * change live (actor reload, config:changed event) and its audit entry are the caller's.
 */
import { randomBytes } from 'node:crypto';
import { Conflict, Invalid, NotFound, type FieldError } from '../errors.js';
import { UniqueViolation } from '../storage/errors.js';
import type { ResourceChange, ResourceRecord, ResourceRepository, TenantId } from '../storage/types.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';

/** Resources per tenant: the token endpoint keeps them all in memory per live tenant. */
export const MAX_RESOURCES_PER_TENANT = 100;

export interface ResourceScope {
  repo: ResourceRepository;
  tenant: TenantId;
  /** The tenant's effective configuration: its signing algorithms and access-token lifetime. */
  config: EffectiveConfig;
}

export type ResourceInput = Pick<ResourceRecord, 'identifier' | 'name' | 'scopes' | 'token_format' | 'include_roles'> &
  Partial<Pick<ResourceRecord, 'access_token_ttl' | 'signing_alg'>>;

/** The fields a change may carry; `identifier` and `id` (a GET sent back) are accepted only unchanged. */
export type ResourcePatch = Partial<Omit<ResourceRecord, 'id' | 'created_at' | 'updated_at'>> & { id?: unknown };

export async function getResource(scope: ResourceScope, id: string): Promise<ResourceRecord> {
  const record = await scope.repo.get(scope.tenant, id);
  if (!record) throw new NotFound(`Resource ${id} not found`);
  return record;
}

/** The algorithm must be one the tenant's key store signs with, or tokens could not be issued. */
function checkAlg(config: EffectiveConfig, alg: string | undefined): void {
  const algs: readonly string[] = config.security.key_store.algorithms;
  if (alg !== undefined && !algs.includes(alg)) throw new Invalid([{ field: 'signing_alg', message: `must be one of ${algs.join(', ')} (the tenant's signing algorithms)` }]);
}

export async function createResource(scope: ResourceScope, input: ResourceInput): Promise<ResourceRecord> {
  const { repo, tenant, config } = scope;
  checkAlg(config, input.signing_alg);
  if ((await repo.count(tenant)) >= MAX_RESOURCES_PER_TENANT) {
    throw new Invalid([{ field: 'body', message: `a tenant has at most ${MAX_RESOURCES_PER_TENANT} resources` }]);
  }
  const now = new Date().toISOString();
  const record: ResourceRecord = {
    id: randomBytes(16).toString('base64url'),
    identifier: input.identifier,
    name: input.name,
    scopes: input.scopes,
    token_format: input.token_format,
    access_token_ttl: input.access_token_ttl ?? config.oidc.ttl.access_token,
    signing_alg: input.signing_alg ?? config.security.key_store.algorithms[0]!,
    include_roles: input.include_roles,
    created_at: now,
    updated_at: now,
  };
  try {
    await repo.create(tenant, record);
  } catch (err) {
    if (err instanceof UniqueViolation && err.field === 'identifier') throw new Conflict('A resource with this identifier already exists');
    throw err;
  }
  return record;
}

/** Changes the supplied fields; returns the resource as stored and the names of the fields given. */
export async function updateResource(scope: ResourceScope, id: string, patch: ResourcePatch): Promise<{ record: ResourceRecord; fields: string[] }> {
  const existing = await getResource(scope, id);
  const { identifier, id: sentId, ...fields } = patch;
  // Sent back unchanged (a GET), the fixed fields are ignored; a different value asks for a change
  // this request cannot make, and a 200 would say it was made.
  const fixed: FieldError[] = [];
  if (sentId !== undefined && sentId !== existing.id) fixed.push({ field: 'id', message: 'cannot be changed' });
  if (identifier !== undefined && identifier !== existing.identifier) {
    fixed.push({ field: 'identifier', message: 'cannot be changed (tokens and grants name it); create another resource' });
  }
  if (fixed.length) throw new Invalid(fixed);
  checkAlg(scope.config, fields.signing_alg);
  const change: ResourceChange = { ...fields, updated_at: new Date().toISOString() };
  const updated = await scope.repo.update(scope.tenant, existing.id, change);
  if (!updated) throw new NotFound(`Resource ${existing.id} not found`);
  return { record: updated, fields: Object.keys(fields).filter((k) => fields[k as keyof typeof fields] !== undefined) };
}

export async function deleteResource(scope: ResourceScope, id: string): Promise<void> {
  if (!(await scope.repo.delete(scope.tenant, id))) throw new NotFound(`Resource ${id} not found`);
}
