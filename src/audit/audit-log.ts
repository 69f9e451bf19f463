/**
 * Writes audit entries (spec 1.6). Type strings: `login`, `failed_login`, `logout`,
 * `password_reset`, `mfa_enabled`, `account_locked`, ... and `<resource>.<action>` for
 * administration (`client.created`, `client.updated`, `client.deleted`, `client.secret_rotated`,
 * ...). A failed audit write is logged, never turned into a failed request.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AuditEntry, AuditStatus, Storage, TenantId } from '../storage/types.js';

export interface AuditEvent {
  type: string;
  status?: AuditStatus;
  username?: string | null;
  user_id?: string | null;
  client_id?: string | null;
  ip_address?: string | null;
  user_agent?: string | null;
  details?: Record<string, unknown>;
}

export class AuditLog {
  constructor(
    private readonly storage: Storage,
    private readonly log: Logger,
  ) {}

  async record(tenant: TenantId, event: AuditEvent): Promise<AuditEntry | undefined> {
    const entry: AuditEntry = {
      id: randomUUID(),
      type: event.type,
      status: event.status ?? 'success',
      username: event.username ?? null,
      user_id: event.user_id ?? null,
      client_id: event.client_id ?? null,
      ip_address: event.ip_address ?? null,
      user_agent: event.user_agent?.slice(0, 512) ?? null,
      tenant_id: tenant,
      details: event.details ?? {},
      timestamp: new Date().toISOString(),
    };
    try {
      await this.storage.audit.insert(tenant, entry);
      return entry;
    } catch (err) {
      this.log.error({ err, tenant, type: event.type }, 'audit entry could not be written');
      return undefined;
    }
  }
}
