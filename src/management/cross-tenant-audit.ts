/**
 * The audit trail of a Management API call made in one tenant with another tenant's token (a
 * `_platforms` token holding svc:cross-tenant:*, authenticate.ts), by the rule a tenant
 * configuration change already follows (tenants/config-operations.ts):
 *
 * - every entry the call writes in the addressed tenant carries `details.by_tenant`, the caller's
 *   tenant: its `client_id` (and `user_id` with a user token) is one of that tenant, not of the
 *   addressed one, and the entry must say so;
 * - every such entry that was stored is copied into the caller's own log once the call is done,
 *   with `details.tenant` naming the tenant it acted on, so the acting tenant's operators see what
 *   its clients did elsewhere. The copy is attributed to the caller only (client, request, and the
 *   acting user with a user token); the affected ids stay in `details`.
 *
 * A domain write stores its entry in its own transaction (users, clients), and one that did not
 * commit (a PATCH applied again to a newer client, a unique violation) leaves an entry that was
 * prepared but never stored: only those read back from the addressed tenant's log are copied.
 */
import type { Attribution, AuditEvent, AuditWriter } from '../audit/audit-log.js';
import { Unavailable } from '../errors.js';
import type { AuditEntry, AuditRepository, TenantId } from '../storage/types.js';

interface Written {
  entry: AuditEntry;
  /** Known stored (record); otherwise prepared for a domain write that may not have committed. */
  stored: boolean;
}

export class CrossTenantAudit implements AuditWriter {
  private readonly written: Written[] = [];

  constructor(
    private readonly base: AuditWriter,
    private readonly log: Pick<AuditRepository, 'get'>,
    /** The tenant the call acts on. */
    private readonly target: TenantId,
    /** The tenant of the caller's token. */
    private readonly acting: TenantId,
  ) {}

  entry(tenant: TenantId, event: AuditEvent): AuditEntry {
    const entry = this.base.entry(tenant, this.attributed(tenant, event));
    if (tenant === this.target) this.written.push({ entry, stored: false });
    return entry;
  }

  async record(tenant: TenantId, event: AuditEvent): Promise<AuditEntry | undefined> {
    const entry = await this.base.record(tenant, this.attributed(tenant, event));
    if (entry && tenant === this.target) this.written.push({ entry, stored: true });
    return entry;
  }

  async recordOrFail(tenant: TenantId, event: AuditEvent): Promise<AuditEntry> {
    const entry = await this.base.recordOrFail(tenant, this.attributed(tenant, event));
    if (tenant === this.target) this.written.push({ entry, stored: true });
    return entry;
  }

  drain(): Promise<void> {
    return this.base.drain();
  }

  /**
   * Runs the call, then copies its stored entries into the acting tenant's log. A call that failed
   * after storing a change still gets its copies (its error is what the caller sees); a call that
   * succeeded but whose copies could not all be written answers 503, as any administrator's change
   * whose entry could not be written does (AuditLog.recordOrFail): the change itself stays.
   */
  async around<T>(by: Attribution, run: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await run();
    } catch (err) {
      await this.copy(by).catch(() => undefined); // the call's own error is the answer
      throw err;
    }
    const missing = await this.copy(by);
    if (missing.length) {
      throw new Unavailable(`The change was stored but its audit entry in ${this.acting} (${missing.join(', ')}) could not be written: read the resource before retrying`);
    }
    return result;
  }

  private attributed(tenant: TenantId, event: AuditEvent): AuditEvent {
    return tenant === this.target ? { ...event, details: { ...event.details, by_tenant: this.acting } } : event;
  }

  /** Writes the copies, in the order the entries were written; the types of those that failed. */
  private async copy(by: Attribution): Promise<string[]> {
    const missing: string[] = [];
    for (const { entry, stored } of this.written.splice(0)) {
      if (!stored && !(await this.log.get(this.target, entry.id).catch(() => entry))) continue; // unreadable: copied rather than lost
      const { by_tenant: _ignored, ...details } = entry.details;
      const copy = await this.base.record(this.acting, { type: entry.type, status: entry.status, ...by, details: { ...details, tenant: this.target } });
      if (!copy) missing.push(entry.type);
    }
    return missing;
  }
}
