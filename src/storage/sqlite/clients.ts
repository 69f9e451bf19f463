import { isDeepStrictEqual } from 'node:util';
import type { AuditEntry, ClientFilter, ClientRecord, ClientRepository, Page, PageRequest, TenantId, UsageEntry } from '../types.js';
import type { SqliteAudit } from './audit.js';
import { keysetPage, prepared, searchCondition, type Db } from './db.js';

interface Row {
  client_id: string;
  secret_hash: string | null;
  secret_sealed: string | null;
  secret_generation: number;
  metadata: string;
  active: number;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
  tokens_issued: number;
}

const COLUMNS = 'client_id, secret_hash, secret_sealed, secret_generation, metadata, active, created_at, updated_at, last_used_at, tokens_issued';

function toRecord(row: Row): ClientRecord {
  return {
    client_id: row.client_id,
    secret_hash: row.secret_hash,
    secret_sealed: row.secret_sealed,
    secret_generation: row.secret_generation,
    metadata: JSON.parse(row.metadata) as ClientRecord['metadata'],
    active: row.active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    last_used_at: row.last_used_at,
    tokens_issued: row.tokens_issued,
  };
}

export class SqliteClients implements ClientRepository {
  private readonly getStmt;
  private readonly insertStmt;
  private readonly deleteStmt;
  private readonly usageStmt;
  private readonly countStmt;

  constructor(
    private readonly db: Db,
    /** Audit entries of a write go in the write's own transaction. */
    private readonly audit: SqliteAudit,
  ) {
    this.getStmt = db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM clients WHERE tenant_id = ? AND client_id = ?`);
    this.insertStmt = db.prepare(
      `INSERT INTO clients (tenant_id, ${COLUMNS}, client_name, application_type, description)
       VALUES (@tenant_id, @client_id, @secret_hash, @secret_sealed, @secret_generation, @metadata, @active, @created_at, @updated_at, @last_used_at, @tokens_issued, @client_name, @application_type, @description)`,
    );
    this.deleteStmt = db.prepare('DELETE FROM clients WHERE tenant_id = ? AND client_id = ?');
    this.usageStmt = db.prepare(
      'UPDATE clients SET tokens_issued = tokens_issued + ?, last_used_at = max(coalesce(last_used_at, \'\'), ?) WHERE tenant_id = ? AND client_id = ?',
    );
    this.countStmt = db.prepare<[string], number>('SELECT count(*) FROM clients WHERE tenant_id = ?').pluck();
  }

  async create(tenant: TenantId, r: ClientRecord, audit?: AuditEntry): Promise<void> {
    this.atomically(tenant, audit, () => this.insertStmt.run({
      tenant_id: tenant,
      client_id: r.client_id,
      secret_hash: r.secret_hash,
      secret_sealed: r.secret_sealed,
      secret_generation: r.secret_generation,
      metadata: JSON.stringify(r.metadata),
      active: r.active ? 1 : 0,
      created_at: r.created_at,
      updated_at: r.updated_at,
      last_used_at: r.last_used_at,
      tokens_issued: r.tokens_issued,
      client_name: r.metadata.client_name,
      application_type: r.metadata.application_type,
      description: r.metadata.description ?? null,
    }).changes);
  }

  /** Runs the write and, when it changed a row, the audit entry, in one transaction. */
  private atomically(tenant: TenantId, audit: AuditEntry | undefined, write: () => number): number {
    return this.db.transaction(() => {
      const changes = write();
      if (changes > 0 && audit) this.audit.write(tenant, audit);
      return changes;
    })();
  }

  async get(tenant: TenantId, clientId: string): Promise<ClientRecord | undefined> {
    const row = this.getStmt.get(tenant, clientId);
    return row ? toRecord(row) : undefined;
  }

  async list(tenant: TenantId, filter: ClientFilter, page: PageRequest): Promise<Page<ClientRecord>> {
    const where = ['tenant_id = @tenant'];
    const params: Record<string, unknown> = { tenant };
    if (filter.application_type) {
      where.push('application_type = @application_type');
      params.application_type = filter.application_type;
    }
    if (filter.active !== undefined) {
      where.push('active = @active');
      params.active = filter.active ? 1 : 0;
    }
    if (filter.q) {
      where.push(searchCondition(filter.q, ['client_name', 'client_id', "coalesce(description, '')"], params));
    }
    const result = keysetPage<Row>(this.db, { table: 'clients', columns: COLUMNS, where: where.join(' AND '), params, sortKey: ['created_at', 'client_id'] }, page);
    return { ...result, items: result.items.map(toRecord) };
  }

  async count(tenant: TenantId): Promise<number> {
    return this.countStmt.get(tenant) ?? 0;
  }

  async update(tenant: TenantId, clientId: string, change: Parameters<ClientRepository['update']>[2], audit?: AuditEntry, unlessChangedFrom?: ClientRecord['metadata']): Promise<ClientRecord | undefined> {
    const sets: string[] = ['updated_at = @updated_at'];
    const params: Record<string, unknown> = { tenant, clientId, updated_at: new Date().toISOString() };
    if (change.metadata) {
      sets.push('metadata = @metadata', 'client_name = @client_name', 'application_type = @application_type', 'description = @description');
      params.metadata = JSON.stringify(change.metadata);
      params.client_name = change.metadata.client_name;
      params.application_type = change.metadata.application_type;
      params.description = change.metadata.description ?? null;
    }
    if (change.active !== undefined) {
      sets.push('active = @active');
      params.active = change.active ? 1 : 0;
    }
    if (change.secret_hash !== undefined) {
      sets.push('secret_hash = @secret_hash');
      params.secret_hash = change.secret_hash;
    }
    if (change.secret_sealed !== undefined) {
      sets.push('secret_sealed = @secret_sealed');
      params.secret_sealed = change.secret_sealed;
    }
    if (change.bump_generation) sets.push('secret_generation = secret_generation + 1');
    const changes = this.atomically(tenant, audit, () => {
      // Compared as values inside the write's transaction (SQLite has one writer at a time).
      if (unlessChangedFrom) {
        const current = this.getStmt.get(tenant, clientId);
        if (!current || !isDeepStrictEqual(JSON.parse(current.metadata), unlessChangedFrom)) return 0;
      }
      return prepared(this.db, `UPDATE clients SET ${sets.join(', ')} WHERE tenant_id = @tenant AND client_id = @clientId`).run(params).changes;
    });
    if (changes === 0) return undefined;
    return this.get(tenant, clientId);
  }

  async delete(tenant: TenantId, clientId: string, audit?: AuditEntry): Promise<boolean> {
    return this.atomically(tenant, audit, () => this.deleteStmt.run(tenant, clientId).changes) > 0;
  }

  async recordUsageBatch(entries: readonly UsageEntry[]): Promise<void> {
    this.db.transaction(() => {
      for (const e of entries) this.usageStmt.run(e.tokens, e.lastUsedAt, e.tenant, e.clientId);
    })();
  }
}
