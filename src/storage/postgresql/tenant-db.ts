/**
 * The one way the repositories reach PostgreSQL. Every unit of work is a transaction that first
 * binds the tenant with `SET LOCAL app.tenant_id = '<tenant>'`: the row-level
 * security policies compare every row with it, so a statement that forgot its `tenant_id = $1`
 * filter still sees nothing of another tenant, and the binding ends with the transaction, before
 * the connection goes back to the pool.
 *
 * `transaction()` (KeyRepository.transaction) keeps one transaction open across several repository
 * calls: the calls made inside fn find it through AsyncLocalStorage and join it instead of taking a
 * connection of their own. It also takes a per-tenant advisory lock, so two instances rotating the
 * same tenant's keys run one after the other (READ COMMITTED alone would let both see "due").
 *
 * With `guardTenants` (multi-tenant mode), the write transactions of a registered tenant also call
 * svc_tenant_write_guard (migration 110) right after the binding, in the same message: it holds
 * the tenant's advisory lock shared until the transaction ends and fails with SV404 (TenantGone)
 * when the tenant's record is gone, so no write commits after the tenant's delete did, and the
 * delete, which takes the lock exclusive, purges every write that committed before it
 * (docs/decisions.md "Tenant delete against writes in flight"). Writes are every withTenant and
 * transaction() transaction, and the statement() and script() messages with an INSERT: an UPDATE
 * or DELETE only reaches rows that exist, and the purge waits for those it races (row locks).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import pg, { type Pool, type PoolClient, type QueryResult, type Queryable } from 'pg';
import { TenantGone } from '../../errors.js';
import { BUILT_IN_TENANTS } from '../registry.js';
import { isReadTimeout, OUT_OF_RESOURCES, sqlState, storageError } from './errors.js';
import { executeStatement, prepareStatement, PreparedStatements } from './prepared.js';
import { runSimple } from './simple-query.js';
import { oncePerMinute } from '../failure-report.js';
import { inlineLiterals, paramLiterals, pgParam, statementSummary } from './sql.js';

/** Where slow statements and a server out of resources are reported (the service's pino logger fits). */
export interface QueryLog {
  warn(obj: Record<string, unknown>, msg: string): void;
  error?(obj: Record<string, unknown>, msg: string): void;
}

export interface Rows<R> {
  rows: R[];
  rowCount: number;
}

export type Query = <R = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<Rows<R>>;

interface Scope {
  tenant: string;
  query: Query;
  /** False once the transaction ended: late async work started inside fn must not reuse it. */
  open: boolean;
}

/**
 * The statement that binds a tenant for the rest of the transaction, as literal SQL. SET LOCAL
 * rather than `SELECT set_config(..., true)`, which does the same: a utility command is not
 * planned and answers with no row for the client to parse (8-12 µs less server CPU per statement
 * here, in front of a prepared EXECUTE). It acts in an explicit transaction and in the implicit
 * one PostgreSQL opens for a simple-protocol message of several statements, which is how
 * statement() sends it; alone it would do nothing, and it is never sent alone.
 */
const bindTenant = (tenant: string) => `SET LOCAL app.tenant_id = ${pg.escapeLiteral(tenant)}`;

/** The write guard's call (migration 110): SV404 once the tenant's record is gone. */
const guardTenant = (tenant: string) => `SELECT svc_tenant_write_guard(${pg.escapeLiteral(tenant)})`;

/** SQLSTATE svc_tenant_write_guard raises for a tenant without a record. */
const TENANT_GONE = 'SV404';

/** A statement that adds rows (an INSERT, alone or in a WITH; an upsert). */
const INSERTS = /\bINSERT\s+INTO\b/i;

/** The error a call rejects with: storageError's, or TenantGone when the guard refused the tenant. */
const failure = (err: unknown, tenant: string | undefined) => (tenant !== undefined && sqlState(err) === TENANT_GONE ? new TenantGone(tenant) : storageError(err));

/** Two-key form: the first key names what is locked, so unrelated advisory locks never collide. */
const TENANT_LOCK = 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))';

export class TenantDb {
  private readonly scope = new AsyncLocalStorage<Scope>();
  /** transaction() calls in flight (their scope is enabled only while there is one). */
  private sharedScopes = 0;
  /** statement()'s texts prepared on the server, per connection; undefined when switched off. */
  private readonly prepared: PreparedStatements | undefined;
  /** Whether writes of registered tenants go through the write guard (multi-tenant mode). */
  private readonly guardTenants: boolean;
  private readonly reportOutOfResources: (code: string, err: Error) => void;

  constructor(
    private readonly pool: Pool,
    private readonly slowQueryMs: number,
    private readonly log?: QueryLog,
    opts: { preparedStatements?: boolean; guardTenants?: boolean } = {},
  ) {
    this.prepared = opts.preparedStatements === false ? undefined : new PreparedStatements();
    this.guardTenants = opts.guardTenants === true;
    this.reportOutOfResources = oncePerMinute((code, err) =>
      (log?.error ?? log?.warn)?.call(log, { code, reason: err.message }, 'PostgreSQL is out of resources (disk, memory or I/O): requests that need it answer 503 until it recovers (reported once a minute while it lasts)'),
    );
  }

  /** failure(), having told the operator of a server out of resources. */
  private failed(err: unknown, tenant: string | undefined): unknown {
    const code = sqlState(err);
    if (code !== undefined && OUT_OF_RESOURCES.has(code) && err instanceof Error) this.reportOutOfResources(code, err);
    return failure(err, tenant);
  }

  /**
   * The statements that open a message for the tenant: the binding, and the write guard when
   * `writes` and the tenant is a registered one. Their results come first in the answer.
   */
  private opening(tenant: string, writes: boolean): string[] {
    return writes && this.guardTenants && !BUILT_IN_TENANTS.has(tenant) ? [bindTenant(tenant), guardTenant(tenant)] : [bindTenant(tenant)];
  }

  /**
   * statement()'s message: the opening and one statement, run as one implicit transaction. The
   * guard follows `sql`, the statement as written (its text may carry values that look like SQL).
   */
  private boundMessage(tenant: string, sql: string, text: string): string {
    return [...this.opening(tenant, INSERTS.test(sql)), text].join(';\n');
  }

  /** Runs fn in a transaction bound to the tenant, or inside the caller's transaction() if any. */
  withTenant<T>(tenant: string, fn: (query: Query) => Promise<T>): Promise<T> {
    const outer = this.scope.getStore();
    if (outer?.open) {
      if (outer.tenant !== tenant) {
        return Promise.reject(new Error(`storage call for tenant "${tenant}" inside a transaction of tenant "${outer.tenant}"`));
      }
      return fn(outer.query);
    }
    return this.run(tenant, fn, false);
  }

  /**
   * One statement bound to the tenant in one round trip: the binding and the statement go to the
   * server as one simple-protocol query, which PostgreSQL runs as one implicit transaction, so the
   * SET LOCAL ends with it exactly as in withTenant (and a write is committed before the answer).
   * withTenant needs three round trips (BEGIN + binding, the statement, COMMIT), which on the user
   * flows' reads cost more than the statement itself. The simple protocol takes no parameters, so
   * they are written as escaped literals of unknown type, the way node-postgres sends them (sql.ts,
   * paramLiterals): into the text, or, for a text used often, as the arguments of an `EXECUTE` of
   * the text prepared on that connection (prepared.ts). A value that cannot be written (a Buffer)
   * takes withTenant's path. Inside a transaction() the statement joins it.
   */
  async statement<R = Record<string, unknown>>(tenant: string, sql: string, params: readonly unknown[] = []): Promise<Rows<R>> {
    const literals = paramLiterals(params);
    const name = literals && this.prepared?.nameFor(sql, literals.length);
    const text = literals && name === undefined ? inlineLiterals(sql, literals) : undefined;
    if (!literals || (name === undefined && text === undefined) || this.scope.getStore()?.open) return this.withTenant(tenant, (q) => q<R>(sql, params));
    if (!tenant) throw new Error('storage call without a tenant');
    const started = performance.now();
    try {
      const bound = name === undefined ? this.pool.query(this.boundMessage(tenant, sql, text!)) : this.executePrepared(tenant, sql, name, literals);
      // Two or three results come back (the binding's and the guard's, without rows, and the statement's): the statement's is the last.
      const results = (await bound) as unknown as ReadonlyArray<QueryResult<R>>;
      const last = results[results.length - 1]!;
      return { rows: last.rows, rowCount: last.rowCount ?? 0 };
    } catch (err) {
      throw this.failed(err, tenant);
    } finally {
      this.reportSlow(performance.now() - started, tenant, sql);
    }
  }

  /**
   * Several statements as one transaction bound to the tenant, in one round trip: the binding and
   * the statements go as one simple-protocol query, which PostgreSQL runs as one implicit
   * transaction (a failing statement rolls back the ones before it, and nothing after it runs), so
   * a write and its audit entries commit together as in withTenant, without its BEGIN and COMMIT
   * and a round trip per statement. Parameters become escaped literals as in statement(), which
   * fixes what a statement can rely on: a literal takes its type from its context (an INSERT's
   * VALUES, a comparison) or from a cast written in the statement. Returns each statement's rows
   * in order. With a parameter that cannot be written as a literal, or inside a transaction(), the
   * statements run one by one in withTenant's transaction instead.
   */
  async script(tenant: string, statements: ReadonlyArray<{ sql: string; params: readonly unknown[] }>): Promise<Array<Rows<Record<string, unknown>>>> {
    const texts: string[] = [];
    for (const s of statements) {
      const literals = paramLiterals(s.params);
      const text = literals && inlineLiterals(s.sql, literals);
      if (text === undefined) break;
      texts.push(text);
    }
    if (texts.length < statements.length || this.scope.getStore()?.open) {
      return this.withTenant(tenant, async (q) => {
        const out: Array<Rows<Record<string, unknown>>> = [];
        for (const s of statements) out.push(await q(s.sql, s.params));
        return out;
      });
    }
    if (!tenant) throw new Error('storage call without a tenant');
    const started = performance.now();
    try {
      const opening = this.opening(tenant, statements.some((st) => INSERTS.test(st.sql)));
      const results = (await this.pool.query([...opening, ...texts].join(';\n'))) as unknown as ReadonlyArray<QueryResult<Record<string, unknown>>>;
      // The first results are the opening's.
      return results.slice(opening.length).map((r) => ({ rows: r.rows, rowCount: r.rowCount ?? 0 }));
    } catch (err) {
      throw this.failed(err, tenant);
    } finally {
      this.reportSlow(performance.now() - started, tenant, statements[0]?.sql ?? '');
    }
  }

  /**
   * statement()'s query for a prepared text: the binding and `EXECUTE`, on a connection where the
   * text is prepared (a PREPARE first, once per connection). As with pool.query, a connection on
   * which a statement failed is not pooled again.
   */
  private async executePrepared(tenant: string, sql: string, name: string, literals: readonly string[]): Promise<unknown> {
    const prepared = this.prepared!;
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const inlined = () => client.query(this.boundMessage(tenant, sql, inlineLiterals(sql, literals)!));
    try {
      if (!prepared.isPrepared(client, name)) {
        try {
          await client.query(prepareStatement(name, sql));
          prepared.prepared(client, name);
        } catch (err) {
          // The server will not prepare it (a parameter whose type it cannot infer): inlined
          // literals, whose unknown type the context settles, from now on. Anything else fails.
          if (!(err instanceof pg.DatabaseError && err.code?.startsWith('42'))) throw err;
          prepared.refuse(sql);
          return await inlined();
        }
      }
      try {
        // Its answers parsed by our own query object (simple-query.ts): the hot reads' path.
        return await runSimple(client, this.boundMessage(tenant, sql, executeStatement(name, literals)));
      } catch (err) {
        // 26000: the connection lost its prepared statements (a DISCARD ALL, a pooler in transaction
        // mode that passed the PREPARE to another server connection). Nothing ran (the binding is
        // rolled back with the failed EXECUTE): the statement is sent inlined, and prepared again
        // on its next use.
        if (!(err instanceof pg.DatabaseError && err.code === '26000')) throw err;
        prepared.forget(client);
        return await inlined();
      }
    } catch (err) {
      broken = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /**
   * One transaction for every repository call fn makes (on this storage), holding the advisory lock
   * `lock` for the tenant until it ends. Note that after a failed statement PostgreSQL refuses the
   * rest of the transaction, so fn cannot catch a storage error and carry on.
   */
  transaction<T>(tenant: string, lock: string, fn: () => Promise<T>): Promise<T> {
    const body = async (query: Query) => {
      await query(TENANT_LOCK, [lock, tenant]);
      return fn();
    };
    return this.scope.getStore()?.open ? this.withTenant(tenant, body) : this.run(tenant, body, true);
  }

  /**
   * One transaction, one round trip, over many tenants: each statement runs bound to its own
   * tenant (row-level security applies to each as usual). For write-behind batches (client usage
   * counters), where a transaction per tenant would cost more than the writes. The statements are
   * literal SQL: callers escape every value with pg.escapeLiteral.
   */
  async acrossTenants(statements: ReadonlyArray<{ tenant: string; sql: string }>): Promise<void> {
    if (!statements.length) return;
    const text = ['BEGIN', ...statements.flatMap((s) => [bindTenant(s.tenant), s.sql]), 'COMMIT'].join(';\n');
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      await this.timed(client, undefined)(text);
    } catch (err) {
      broken = await abort(client, err);
      throw storageError(err);
    } finally {
      client.release(broken);
    }
  }

  /** A statement outside any tenant (maintenance, ping): autocommit, still timed. */
  unscoped<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Rows<R>> {
    return this.timed(this.pool, undefined)<R>(sql, params).catch((err: unknown) => {
      throw storageError(err);
    });
  }

  private async run<T>(tenant: string, fn: (query: Query) => Promise<T>, shareScope: boolean): Promise<T> {
    // An empty tenant would bind '' and match nothing; it is a caller bug worth a clear message.
    if (!tenant) throw new Error('storage call without a tenant');
    const client = await this.connect();
    const scope: Scope = { tenant, query: this.timed(client, tenant), open: true };
    let broken: Error | undefined;
    try {
      // One round trip for all: a parameterless query goes over the simple protocol, which runs
      // several statements (the tenant is a validated slug, and escaped anyway). Any transaction
      // here may write, so each is guarded (an advisory lock and an index lookup, no row written).
      await scope.query(['BEGIN', ...this.opening(tenant, true)].join('; '));
      const result = shareScope ? await this.shared(scope, fn) : await fn(scope.query);
      await scope.query('COMMIT');
      return result;
    } catch (err) {
      broken = await abort(client, err);
      throw this.failed(err, tenant);
    } finally {
      scope.open = false;
      client.release(broken);
    }
  }

  /**
   * fn inside the shared scope. When the last shared transaction ends the scope is disabled: while
   * an AsyncLocalStorage is enabled Node runs promise hooks on every promise of the process, and a
   * key rotation at start would otherwise leave them on for good (issue 17; oidc/request-scope.ts
   * does the same for oidc-provider's context). Work started inside fn that outlives it finds no
   * scope either way (`open` is false by then), so it takes a connection of its own.
   */
  private async shared<T>(scope: Scope, fn: (query: Query) => Promise<T>): Promise<T> {
    this.sharedScopes++;
    try {
      return await this.scope.run(scope, () => fn(scope.query));
    } finally {
      if (--this.sharedScopes === 0) this.scope.disable();
    }
  }

  private async connect(): Promise<PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw storageError(err);
    }
  }

  /**
   * The query function every statement goes through: parameters made storable (sql.ts, pgParam) and
   * statements slower than slow_query_ms reported, without their parameters.
   */
  private timed(target: Queryable, tenant: string | undefined): Query {
    return async <R>(sql: string, params?: readonly unknown[]) => {
      const started = performance.now();
      try {
        const result = await target.query<R>(sql, params?.map(pgParam));
        return { rows: result.rows, rowCount: result.rowCount ?? 0 };
      } finally {
        this.reportSlow(performance.now() - started, tenant, sql);
      }
    };
  }

  private reportSlow(ms: number, tenant: string | undefined, sql: string): void {
    const { slowQueryMs, log } = this;
    if (log && slowQueryMs > 0 && ms >= slowQueryMs) {
      log.warn({ duration_ms: Math.round(ms), tenant, statement: statementSummary(sql) }, 'slow PostgreSQL statement');
    }
  }
}

/**
 * Ends a failed transaction; returns the error to destroy the connection with (instead of pooling
 * it) when it is unusable.
 */
async function abort(client: PoolClient, err: unknown): Promise<Error | undefined> {
  // The server stopped answering: a ROLLBACK would queue behind the unanswered statement and time
  // out too. Destroying the connection ends the transaction on the server as well.
  if (isReadTimeout(err)) return err as Error;
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (rollbackErr) {
    // The connection is unusable (server gone, protocol error): destroy it, do not pool it.
    return rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
  }
}
