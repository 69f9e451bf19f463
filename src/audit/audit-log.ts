/**
 * Writes audit entries (spec 1.6). Type strings: `login`, `failed_login`, `logout`,
 * `password_reset`, `mfa_enabled`, `account_locked`, ... and `<resource>.<action>` for
 * administration (`client.created`, `client.updated`, `client.deleted`, `client.secret_rotated`,
 * ...). A failed audit write is logged, never turned into a failed request.
 */
import { randomFillSync } from 'node:crypto';
import type { Logger } from 'pino';
import { Unavailable } from '../errors.js';
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

/** Who acted, as an audit entry names them: the calling client or user, its address and agent. */
export type Attribution = Pick<AuditEvent, 'client_id' | 'ip_address' | 'user_agent' | 'user_id' | 'username'>;

/**
 * What the service writes its entries through: the AuditLog itself, or a Management API call's view
 * of it that also attributes and copies a cross-tenant caller's entries (management/cross-tenant-audit.ts).
 */
export type AuditWriter = Pick<AuditLog, 'entry' | 'record' | 'recordOrFail' | 'drain'>;

/**
 * Random bytes for the ids, drawn from the CSPRNG a page at a time: one randomBytes() call per id
 * (two, with the sequence) cost more than the rest of an audit entry's preparation.
 */
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let poolOffset = POOL_SIZE;

/** Offset in `pool` of `n` fresh random bytes (n <= POOL_SIZE). */
function takeRandom(n: number): number {
  if (poolOffset + n > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += n;
  return at;
}

const idBytes = Buffer.allocUnsafe(16);

/** UUIDv7: time-ordered, so entries written in the same millisecond still sort in write order per process. */
let lastMs = 0;
let seq = 0;
export function timeOrderedId(now = Date.now()): string {
  if (now === lastMs) seq = (seq + 1) & 0xfff;
  else {
    lastMs = now;
    seq = pool.readUInt16BE(takeRandom(2)) & 0x7ff;
  }
  const b = idBytes;
  const at = takeRandom(16);
  pool.copy(b, 0, at, at + 16);
  b.writeUIntBE(now, 0, 6);
  b[6] = 0x70 | (seq >> 8);
  b[7] = seq & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export class AuditLog {
  /** Writes under way, so a shutdown can wait for them before storage closes (drain()). */
  private readonly pending = new Set<Promise<AuditEntry | undefined>>();

  constructor(
    private readonly storage: Storage,
    private readonly log: Logger,
  ) {}

  /**
   * The entry of an event, not written: for a domain write that stores it in its own transaction
   * (storage/types.ts, ClientRepository and UserRepository).
   */
  entry(tenant: TenantId, event: AuditEvent): AuditEntry {
    return {
      id: timeOrderedId(),
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
  }

  record(tenant: TenantId, event: AuditEvent): Promise<AuditEntry | undefined> {
    const write = this.write(tenant, event);
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
    return write;
  }

  /**
   * For an administrator's change stored before its entry (keys, sessions, resources, registration
   * tokens, tenants and their configuration): an entry that cannot be written fails the request
   * (503), so the change is never acknowledged unaudited. The change itself stays (it committed);
   * the answer says so, and the caller reads before it retries.
   */
  async recordOrFail(tenant: TenantId, event: AuditEvent): Promise<AuditEntry> {
    const written = await this.record(tenant, event);
    if (!written) throw new Unavailable(`The change was stored but its audit entry (${event.type}) could not be written: read the resource before retrying`);
    return written;
  }

  /** Resolves once every entry recorded so far is written (or has failed and been logged). */
  async drain(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  private async write(tenant: TenantId, event: AuditEvent): Promise<AuditEntry | undefined> {
    const entry = this.entry(tenant, event);
    try {
      await this.storage.audit.insert(tenant, entry);
      return entry;
    } catch (err) {
      this.log.error({ err, tenant, type: event.type }, 'audit entry could not be written');
      return undefined;
    }
  }
}
