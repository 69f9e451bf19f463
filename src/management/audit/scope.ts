/**
 * Which tenant's audit log a list reads (spec 1.6 `tenant` filter, issue 19): the caller's own, or,
 * for a `_platforms` token holding svc:cross-tenant:read, the tenant named by `tenant`. Anyone
 * else naming another tenant gets the 403 of the scope they lack; an unknown tenant is a 404, and so
 * is any other tenant in single-tenant mode.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { insufficientScope, notFound } from '../../http/problem.js';
import { PLATFORM_TENANT } from '../../tenancy/resolver.js';
import type { Call } from '../operation.js';

export async function auditTenantOf(call: Call, named: string | undefined): Promise<string> {
  if (named === undefined || named === call.tenant) return call.tenant;
  // One tenant only: another is not there, whatever the token holds (not a scope it could ask for).
  if (!call.ctx.config.multi_tenancy.enabled) throw notFound(`Tenant ${named} not found`);
  const platformIssuer = call.ctx.resolver.issuerOf(PLATFORM_TENANT);
  const scopes = new Set((call.claims.scope ?? '').split(' '));
  if (call.claims.iss !== platformIssuer || !scopes.has('svc:cross-tenant:read')) {
    throw insufficientScope('svc:cross-tenant:read');
  }
  if (named !== PLATFORM_TENANT && !(await call.ctx.registry.find(named))) throw notFound(`Tenant ${named} not found`);
  return named;
}

/**
 * An IP address in the form audit entries store it (IPv4-mapped IPv6 as IPv4, IPv6 per RFC 5952);
 * undefined when not an address. Only the standard forms are addresses (node:net isIP: IPv4 in
 * dotted decimal without leading zeros, IPv6): ipaddr.js alone also takes the legacy inet_aton
 * forms (`0177.0.0.1`, `0x7f000001`, `2130706433`, `127.1`) and reads a leading zero as octal, so
 * `0127.0.0.1` would search 87.0.0.1.
 */
export function canonicalIp(value: string): string | undefined {
  if (isIP(value) === 0 || !ipaddr.isValid(value)) return undefined;
  const addr = ipaddr.process(value);
  return addr.kind() === 'ipv6' ? (addr as ipaddr.IPv6).toRFC5952String() : addr.toString();
}
