/** API resources on SQLite (migrations/sqlite/050_resources.sql). */
import { UniqueViolation } from '../errors.js';
import type { Page, PageRequest, ResourceChange, ResourceRecord, ResourceRepository, TenantId } from '../types.js';
import { keysetPage, prepared, type Db } from './db.js';

interface Row extends Omit<ResourceRecord, 'scopes' | 'include_roles'> {
  scopes: string;
  include_roles: number;
}

const COLUMNS = 'id, identifier, name, scopes, token_format, access_token_ttl, signing_alg, include_roles, created_at, updated_at';
const UPDATABLE = ['name', 'scopes', 'token_format', 'access_token_ttl', 'signing_alg', 'include_roles', 'updated_at'] as const;

const toRecord = (r: Row): ResourceRecord => ({ ...r, scopes: JSON.parse(r.scopes) as ResourceRecord['scopes'], include_roles: r.include_roles === 1 });

function column(key: (typeof UPDATABLE)[number], value: unknown): unknown {
  if (key === 'scopes') return JSON.stringify(value);
  if (key === 'include_roles') return value ? 1 : 0;
  return value;
}

function translate(err: unknown): unknown {
  const e = err as { code?: string; message?: string };
  if (e?.code === 'SQLITE_CONSTRAINT_UNIQUE' && e.message?.includes('identifier')) return new UniqueViolation('identifier');
  if (e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new UniqueViolation('id');
  return err;
}

export class SqliteResources implements ResourceRepository {
  constructor(private readonly db: Db) {}

  async create(tenant: TenantId, r: ResourceRecord): Promise<void> {
    try {
      prepared(this.db, `INSERT INTO resources (tenant_id, ${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
        tenant, r.id, r.identifier, r.name, JSON.stringify(r.scopes), r.token_format, r.access_token_ttl, r.signing_alg, r.include_roles ? 1 : 0, r.created_at, r.updated_at,
      );
    } catch (err) {
      throw translate(err);
    }
  }

  async get(tenant: TenantId, id: string): Promise<ResourceRecord | undefined> {
    const row = prepared<[string, string], Row>(this.db, `SELECT ${COLUMNS} FROM resources WHERE tenant_id = ? AND id = ?`).get(tenant, id);
    return row ? toRecord(row) : undefined;
  }

  async list(tenant: TenantId, page: PageRequest): Promise<Page<ResourceRecord>> {
    const result = keysetPage<Row>(this.db, { table: 'resources', columns: COLUMNS, where: 'tenant_id = @tenant', params: { tenant }, sortKey: ['created_at', 'id'] }, page);
    return { ...result, items: result.items.map(toRecord) };
  }

  async all(tenant: TenantId): Promise<ResourceRecord[]> {
    return prepared<[string], Row>(this.db, `SELECT ${COLUMNS} FROM resources WHERE tenant_id = ? ORDER BY created_at, id`).all(tenant).map(toRecord);
  }

  async count(tenant: TenantId): Promise<number> {
    return prepared<[string], number>(this.db, 'SELECT count(*) FROM resources WHERE tenant_id = ?').pluck().get(tenant) ?? 0;
  }

  async update(tenant: TenantId, id: string, change: ResourceChange): Promise<ResourceRecord | undefined> {
    const keys = UPDATABLE.filter((k) => change[k] !== undefined);
    const sets = keys.map((k) => `${k} = ?`).join(', ');
    const changed = prepared(this.db, `UPDATE resources SET ${sets} WHERE tenant_id = ? AND id = ?`).run(...keys.map((k) => column(k, change[k])), tenant, id).changes;
    return changed ? this.get(tenant, id) : undefined;
  }

  async delete(tenant: TenantId, id: string): Promise<boolean> {
    return prepared(this.db, 'DELETE FROM resources WHERE tenant_id = ? AND id = ?').run(tenant, id).changes > 0;
  }
}
