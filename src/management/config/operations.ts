/**
 * The addressed tenant's own configuration (issue 16 follow-up): a tenant admin edits its Settings
 * without the platform's cross-tenant scopes.
 *
 *   GET /api/v1/config             -> {data: {<section>: {...}}}, {data: {}} when unset   svc:config:read
 *   PUT /api/v1/config/:section    -> body: the section's fields; 200 with the whole      svc:config:write
 *                                     updated configuration
 *
 * Same domain code as the platform resource `/api/v1/tenants/:slug/config` (validation, floors and
 * ceilings, sealing, propagation, audit): only the tenant differs, which is the one the request
 * resolved to (the token's issuer), never one named by the caller, so there is no wrong-tenant
 * path to take. In single-tenant mode that is `default`. An unknown section is 404: the path names
 * a resource that does not exist (the platform resource keeps its 422 on `section`).
 */
import { notFound } from '../../http/problem.js';
import { MASK } from '../../tenancy/config/secrets.js';
import { SECTION_NAMES, isSectionName } from '../../tenancy/config/sections.js';
import { op, type Operation } from '../operation.js';
import { CONFIG_RESPONSE, readTenantConfig, writeTenantSection } from '../tenants/config-operations.js';

export const ownConfigOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/config', scope: 'svc:config:read', rateClass: 'read', tag: 'config',
    summary: `This tenant's configuration overrides, per section ({} when none); secrets read as ${MASK}`,
    success: { status: 200, schema: CONFIG_RESPONSE },
    handler: async (call) => readTenantConfig(call, call.tenant),
  }),
  op({
    method: 'PUT', path: '/api/v1/config/:section', scope: 'svc:config:write', rateClass: 'write', tag: 'config',
    summary: `Replace one section of this tenant's configuration (${SECTION_NAMES.join(', ')}); the body holds its fields. Sending ${MASK} for a secret keeps the stored one`,
    success: { status: 200, schema: CONFIG_RESPONSE, description: 'The whole updated configuration' },
    errors: [404, 413, 415, 422],
    handler: async (call) => {
      const section = call.params.section;
      if (!isSectionName(section)) throw notFound(`No configuration section ${section}; sections: ${SECTION_NAMES.join(', ')}`);
      return writeTenantSection(call, call.tenant, section);
    },
  }),
];
