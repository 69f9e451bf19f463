import type Database from 'better-sqlite3';
import type { Storage } from '../types.js';
import { SqliteAudit } from './audit.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { SqliteClients } from './clients.js';
import { openSqlite, type Db } from './db.js';
import { SqliteKeys } from './keys.js';
import { SqliteLoginAttempts } from './login-attempts.js';
import { SqliteOidcPayloads } from './oidc.js';
import { SqliteRegistrationTokens } from './registration-tokens.js';
import { SqliteAccountTokens } from './account-tokens.js';
import { SqliteUserPreferences } from './user-preferences.js';
import { SqliteSocialIdentities } from './social-identities.js';
import { SqliteResources } from './resources.js';
import { SqliteTenantConfig } from './tenant-config.js';
import { SqliteTenants } from './tenants.js';
import { SqliteUsers } from './users.js';
import { SqliteWebauthn } from './webauthn.js';
import { readInTurns } from './turn-reads.js';
import { notNowUnavailable, reportOncePerMinute, type SqliteFailure } from './failures.js';

export class SqliteStorage implements Storage {
  readonly kind = 'sqlite' as const;
  readonly clients: SqliteClients;
  readonly oidc: SqliteOidcPayloads;
  readonly keys: SqliteKeys;
  readonly audit: SqliteAudit;
  readonly users: SqliteUsers;
  readonly loginAttempts: SqliteLoginAttempts;
  readonly registrationTokens: SqliteRegistrationTokens;
  readonly accountTokens: SqliteAccountTokens;
  readonly userPreferences: SqliteUserPreferences;
  readonly tenants: SqliteTenants;
  readonly tenantConfig: SqliteTenantConfig;
  readonly socialIdentities: SqliteSocialIdentities;
  readonly webauthn: SqliteWebauthn;
  readonly resources: SqliteResources;
  /** readTogether's transaction. */
  private readonly beginRead: Database.Statement;
  private readonly endRead: Database.Statement;
  /** WAL checkpoints on a worker thread once the service writes enough (checkpointer.ts); none for :memory:. */
  private checkpointer: BackgroundCheckpointer | undefined;

  /** `report` hears of each failure that is answered 503 (failures.ts). */
  constructor(
    readonly db: Db,
    report: (err: SqliteFailure) => void = () => undefined,
  ) {
    // Before any repository prepares its statements (turn-reads.ts, failures.ts).
    readInTurns(db, notNowUnavailable(report));
    this.audit = new SqliteAudit(db);
    this.clients = new SqliteClients(db, this.audit);
    this.oidc = new SqliteOidcPayloads(db);
    this.keys = new SqliteKeys(db);
    this.users = new SqliteUsers(db, this.audit);
    this.loginAttempts = new SqliteLoginAttempts(db);
    this.registrationTokens = new SqliteRegistrationTokens(db);
    this.accountTokens = new SqliteAccountTokens(db);
    this.userPreferences = new SqliteUserPreferences(db);
    this.tenantConfig = new SqliteTenantConfig(db);
    this.socialIdentities = new SqliteSocialIdentities(db);
    this.tenants = new SqliteTenants(db);
    this.webauthn = new SqliteWebauthn(db, this.audit);
    this.resources = new SqliteResources(db);
    this.beginRead = db.prepare('BEGIN');
    this.endRead = db.prepare('COMMIT');
  }

  /**
   * `log` receives a failure of the checkpoint thread (the service's own checkpoints carry on) and,
   * once a minute, that statements are refused for a full disk or the like (failures.ts).
   */
  static open(path: string, log?: { warn(obj: Record<string, unknown>, msg: string): void; error(obj: Record<string, unknown>, msg: string): void }): SqliteStorage {
    const storage = new SqliteStorage(openSqlite(path), reportOncePerMinute(log));
    if (path !== ':memory:' && path !== '') {
      storage.checkpointer = new BackgroundCheckpointer(path, { db: storage.db, onError: (error) => log?.warn({ error }, 'SQLite checkpoint thread failed; checkpoints continue on the event loop') });
    }
    return storage;
  }

  /**
   * The reads in one read transaction (issue 17). Outside one, every statement takes and drops the
   * WAL read lock itself, two fcntl calls and an fstat: three primary-key reads cost ~20 µs one by
   * one and ~12 µs together here. Only when no transaction is open and no OIDC write waits for the
   * group commit (write-batch.ts), so nothing can write inside it; otherwise the reads run as they
   * are. Locking the file exclusively would save the same without this, but the CLI and a second
   * process must be able to open the file while the service runs (docs/decisions.md). Since
   * turn-reads.ts a read outside this joins the turn's read transaction anyway; this still gives a
   * group its own transaction when none is open and ends it with the group.
   */
  readTogether<T>(reads: () => T): T {
    if (this.db.inTransaction || this.oidc.writesQueued) return reads();
    this.beginRead.run();
    try {
      return reads();
    } finally {
      if (this.db.inTransaction) this.endRead.run();
    }
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    // The thread's connection closes first: the service's own close then checkpoints what is left.
    await this.checkpointer?.close();
    // Writes queued for the group commit (oidc.ts) go in before the file is closed.
    this.oidc.flush();
    this.db.close();
  }
}
