/**
 * Server-side prepared statements for TenantDb.statement (issue 17: the user flows on PostgreSQL).
 *
 * statement() sends the tenant binding and the statement as one simple-protocol query, so the
 * server parses, analyses and plans the statement text every time: for the point reads of the
 * user flows (a user by id, with the row-level security policy) that was about half of the
 * backend's CPU per statement (81-86 µs against 42-47 µs with `EXECUTE`, one connection, 20,000
 * reads of a user by id, measured on this machine's PostgreSQL 15). The simple protocol takes SQL's
 * own `PREPARE name AS ...` and `EXECUTE name(literal, ...)`, so the binding and the statement stay
 * one round trip and one implicit transaction.
 *
 * A prepared statement lives on one connection, so which texts are prepared is remembered per
 * connection (the pool's client object; a destroyed connection takes its set with it). Only texts
 * used PREPARE_AFTER_USES times are prepared: the texts built per call (list filters, partial
 * updates) would otherwise fill every connection with statements run once. Both the names and
 * the per-connection sets are bounded. A text the server will not prepare (a parameter whose type
 * it cannot infer, which a literal of unknown type in place would still have worked for) is not
 * tried again and keeps the inlined path.
 */
import { placeholderCount } from './sql.js';

/** Uses of a statement text before it is prepared. */
export const PREPARE_AFTER_USES = 3;
/** Texts counted at most; the counts start over beyond it (the names given out stay). */
const MAX_COUNTED = 2000;
/** Texts given a name at most (a bound on the server's memory per connection as well). */
export const MAX_NAMED = 200;

export class PreparedStatements {
  private readonly uses = new Map<string, number>();
  /** Prepared texts: their name and how many parameters the server counts. */
  private readonly names = new Map<string, { name: string; params: number }>();
  private readonly refused = new Set<string>();
  /** Names are never reused: a refused text's name may still exist on a connection. */
  private lastName = 0;
  private readonly onConnection = new WeakMap<object, Set<string>>();

  /**
   * The name `sql` is prepared under, once it has been used often enough and takes exactly
   * `paramCount` parameters (EXECUTE must pass one value per parameter the server counted);
   * undefined while it is to be sent inlined.
   */
  nameFor(sql: string, paramCount: number): string | undefined {
    const named = this.names.get(sql);
    if (named !== undefined) return named.params === paramCount ? named.name : undefined;
    if (this.refused.has(sql) || this.names.size >= MAX_NAMED) return undefined;
    const n = (this.uses.get(sql) ?? 0) + 1;
    if (n < PREPARE_AFTER_USES) {
      if (this.uses.size >= MAX_COUNTED) this.uses.clear();
      this.uses.set(sql, n);
      return undefined;
    }
    this.uses.delete(sql);
    const params = placeholderCount(sql);
    if (params !== paramCount) return undefined;
    const name = `svc_${++this.lastName}`;
    this.names.set(sql, { name, params });
    return name;
  }

  /** Whether `name` is prepared on this connection. */
  isPrepared(connection: object, name: string): boolean {
    return this.onConnection.get(connection)?.has(name) ?? false;
  }

  /** `name` was prepared on this connection. */
  prepared(connection: object, name: string): void {
    let set = this.onConnection.get(connection);
    if (!set) this.onConnection.set(connection, (set = new Set()));
    set.add(name);
  }

  /** This connection holds none of them any more. */
  forget(connection: object): void {
    this.onConnection.delete(connection);
  }

  /** The server refused to prepare `sql`: it keeps the inlined path from now on. */
  refuse(sql: string): void {
    this.names.delete(sql);
    this.refused.add(sql);
  }
}

/** The statement that prepares `sql` under `name` (the text comes from this code base, never from input). */
export const prepareStatement = (name: string, sql: string) => `PREPARE ${name} AS ${sql}`;

/** The statement that runs `name` with its parameters as literals (sql.ts, paramLiterals). */
export const executeStatement = (name: string, literals: readonly string[]) => (literals.length ? `EXECUTE ${name}(${literals.join(', ')})` : `EXECUTE ${name}`);
