/**
 * Storage interfaces: audit entries.
 * Imported through the index, ../types.ts, which also states the rules every repository follows.
 */
import type { Page, PageRequest, TenantId } from './common.js';

export type AuditStatus = 'success' | 'failed' | 'info' | 'warning';

export interface AuditEntry {
  id: string;
  type: string;
  status: AuditStatus;
  username: string | null;
  user_id: string | null;
  client_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  tenant_id: string;
  details: Record<string, unknown>;
  timestamp: string;
}

export interface AuditFilter {
  type?: string;
  status?: AuditStatus;
  username?: string;
  user_id?: string;
  client_id?: string;
  /** Exact address as stored (normalised by src/http/ip.ts). */
  ip_address?: string;
  from?: string;
  to?: string;
}

export interface AuditStats {
  totalActivities: number;
  uniqueUsers: number;
  todayCount: number;
  successfulLogins: number;
  failedLogins: number;
}

export interface AuditRepository {
  insert(tenant: TenantId, entry: AuditEntry): Promise<void>;
  get(tenant: TenantId, id: string): Promise<AuditEntry | undefined>;
  list(tenant: TenantId, filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>>;
  types(tenant: TenantId): Promise<string[]>;
  stats(tenant: TenantId, todayStartIso: string): Promise<AuditStats>;
}
