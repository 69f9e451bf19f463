/**
 * Tenant configuration overrides (spec 1.5, 2.8, 4.9): read every section, replace one.
 *
 *   GET /api/v1/tenants/:slug/config            -> {data: {<section>: {...}}}, {data: {}} when unset
 *   PUT /api/v1/tenants/:slug/config/:section   -> body: the section's fields; 200 with the whole
 *                                                  updated configuration
 *
 * A PUT replaces the section (omitted fields fall back to the global configuration). It is checked
 * by the section's schema (shape, unknown fields) and then by the platform floors and ceilings
 * (tenancy/config/policy.ts); `errors[].field` is relative to the body. Secrets are sealed before
 * they are stored and masked in every response (tenancy/config/secrets.ts). Once stored, the
 * change is applied to this instance's actor of the tenant before the response and announced on
 * `<prefix>:<tenant>:config:changed` for every other instance.
 */
import { notFound, validation } from '../../http/problem.js';
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import type { Config } from '../../config/index.js';
import { configChanged } from '../../tenancy/config-changed.js';
import type { JsonObject } from '../../tenancy/config/json-path.js';
import { violations } from '../../tenancy/config/policy.js';
import { MASK, maskSections, sealSection } from '../../tenancy/config/secrets.js';
import { SECTION_NAMES, SECTION_SCHEMAS, isSectionName, overridesSchema, type SectionName } from '../../tenancy/config/sections.js';
import { loadOverrides } from '../../tenancy/config/store.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, sendJson, serializer } from '../respond.js';
import { zodFieldErrors } from '../../http/zod-errors.js';
import { readJsonObject } from '../validation.js';

const configResponse = dataEnvelope(overridesSchema);
const configOut = serializer(configResponse);

/** The tenant named in the path; 404 for an unknown one (a suspended tenant can still be configured). */
async function requireTenant(call: Call<unknown, unknown, { slug: string }>): Promise<string> {
  const slug = call.params.slug;
  if (!(await call.ctx.registry.find(slug))) throw notFound(`Tenant ${slug} not found`);
  return slug;
}

function sectionOf(call: Call<unknown, unknown, { section: string }>): SectionName {
  const name = call.params.section;
  if (!isSectionName(name)) throw validation([{ field: 'section', message: `must be one of ${SECTION_NAMES.join(', ')}` }]);
  return name;
}

/** The body as the section's schema outputs it, within the platform's floors and ceilings; 422 otherwise. */
function parseSection(section: SectionName, req: HttpRequest, global: Config): JsonObject {
  const raw = readJsonObject(req);
  const result = SECTION_SCHEMAS[section].safeParse(raw);
  if (!result.success) throw validation(zodFieldErrors(result.error, 'body', raw));
  const data = result.data as JsonObject;
  const errors = violations(section, data, global);
  if (errors.length) throw validation(errors);
  return data;
}

/** Section and field names only, never values. In the caller's audit log and, for another tenant, in that tenant's too. */
async function audit(call: Call, tenant: string, section: SectionName, data: JsonObject): Promise<void> {
  const details = { tenant, section, fields: Object.keys(data) };
  await call.audit({ type: 'tenant.config_updated', details });
  if (tenant === call.tenant) return;
  // The same attribution as the caller's own entry (client, request, and the user with a user token).
  await call.ctx.audit.recordOrFail(tenant, { type: 'tenant.config_updated', ...call.by, details: { ...details, by_tenant: call.tenant } });
}

/** Every section of `tenant`'s overrides, secrets masked: the body of both config reads. */
export async function readTenantConfig(call: Call, tenant: string): Promise<HttpResponse> {
  const overrides = await loadOverrides(call.ctx.storage.tenantConfig, tenant);
  return sendJson(200, configOut({ data: maskSections(overrides) }));
}

/**
 * Replaces one section of `tenant`'s overrides from the request body: the schema, the platform's
 * floors and ceilings, sealing of secrets, propagation and the audit entry. Shared by the platform
 * resource (`/tenants/:slug/config`) and the tenant's own (`/config`, src/management/config/).
 */
export async function writeTenantSection(call: Call, tenant: string, section: SectionName): Promise<HttpResponse> {
  const data = parseSection(section, call.req, call.ctx.config);
  const repo = call.ctx.storage.tenantConfig;
  const stored = await repo.get(tenant);
  const sealed = sealSection(call.ctx.sealer, tenant, section, data, stored[section]);
  if (sealed.errors.length) throw validation(sealed.errors);
  await repo.put(tenant, section, sealed.data);
  await configChanged(call.ctx, tenant, section, call.peekActor(tenant));
  await audit(call, tenant, section, data);
  return readTenantConfig(call, tenant);
}

export const CONFIG_RESPONSE = configResponse;

export const tenantConfigOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/tenants/:slug/config', scope: 'svc:cross-tenant:read', rateClass: 'read', tag: 'tenants',
    summary: `Configuration overrides of a tenant, per section ({} when none); secrets read as ${MASK}`,
    platform: true,
    success: { status: 200, schema: configResponse },
    handler: async (call) => readTenantConfig(call, await requireTenant(call)),
  }),
  op({
    method: 'PUT', path: '/api/v1/tenants/:slug/config/:section', scope: 'svc:cross-tenant:write', rateClass: 'write', tag: 'tenants',
    summary: `Replace one section (${SECTION_NAMES.join(', ')}); the body holds its fields. Sending ${MASK} for a secret keeps the stored one`,
    platform: true,
    success: { status: 200, schema: configResponse, description: 'The whole updated configuration' },
    errors: [404, 413, 415, 422],
    handler: async (call) => {
      const tenant = await requireTenant(call);
      return writeTenantSection(call, tenant, sectionOf(call));
    },
  }),
];
