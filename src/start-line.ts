/**
 * The fields of the "listening" line (issue 18 item 13). Single-tenant: the issuer clients use.
 * Multi-tenant: there is no one issuer (the default tenant's may answer 400 in production, where no
 * fallback tenant exists), so the line says so and shows the pattern of the tenants' issuers, how
 * a tenant is picked, and whether Redis carries the shared state.
 */
import type { Config } from './config/index.js';
import { accessLogMode } from './http/access-log.js';

export interface StartFacts {
  port: number;
  transport: string;
  storage: string;
  redis: boolean;
  issuerOf: (tenant: string) => string;
  startupMs: number;
  /** OpenSSL's RSA routine, where it matters (keys/openssl-dispatch.ts dispatchNote). */
  openssl?: string | undefined;
}

export function startLine(config: Config, facts: StartFacts): Record<string, unknown> {
  const common = {
    port: facts.port,
    host: config.host,
    transport: facts.transport === 'native' ? 'uWS native' : 'uWS Node.js fallback',
    node_env: config.node_env,
    storage: facts.storage,
    redis: facts.redis ? 'on' : 'off',
    access_log: accessLogMode(config),
    startup_ms: facts.startupMs,
    ...(facts.openssl !== undefined ? { openssl_rsa: facts.openssl } : {}),
  };
  const mt = config.multi_tenancy;
  if (!mt.enabled) return { ...common, multi_tenancy: false, issuer: facts.issuerOf('default') };
  return {
    ...common,
    multi_tenancy: true,
    // `<tenant>` stands for the tenant's name; the placeholder keeps the line valid for every tenant.
    issuer_pattern: facts.issuerOf('tenant').replace('tenant.', '<tenant>.'),
    tenant_from: mt.extraction_priority.map((s) => (s === 'header' ? `header ${mt.tenant_header}` : 'subdomain')),
    provider_pool: mt.provider_pool.max_size,
  };
}
