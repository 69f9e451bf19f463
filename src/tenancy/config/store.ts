/** Reading a tenant's overrides from storage and turning them into its effective configuration. */
import type { Config } from '../../config/index.js';
import type { TenantConfigRepository } from '../../storage/types.js';
import { mergeConfig, type EffectiveConfig } from './merge.js';
import { SECTION_NAMES, type TenantOverrides } from './sections.js';

/** The tenant's stored overrides (sensitive fields sealed); sections this release does not know are left out. */
export async function loadOverrides(repo: TenantConfigRepository, tenant: string): Promise<TenantOverrides> {
  const stored = await repo.get(tenant);
  const out: Record<string, Record<string, unknown>> = {};
  for (const name of SECTION_NAMES) if (stored[name]) out[name] = stored[name];
  // Written only through the section schemas (PUT .../config/:section); policy.ts clamps again when merging.
  return out as TenantOverrides;
}

export async function loadEffectiveConfig(deps: { config: Config; storage: { tenantConfig: TenantConfigRepository } }, tenant: string): Promise<EffectiveConfig> {
  return mergeConfig(deps.config, await loadOverrides(deps.storage.tenantConfig, tenant));
}
