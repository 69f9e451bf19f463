/**
 * The part of `pg` (node-postgres 8) this code base uses. pg ships no types and @types/pg is not
 * installed; this declares only what src/storage/postgresql relies on, so a wrong call still fails
 * the type check.
 */
declare module 'pg' {
  export type TypeParser = (value: string) => unknown;

  export interface CustomTypes {
    getTypeParser(oid: number, format?: 'text' | 'binary'): TypeParser;
  }

  export interface ClientConfig {
    connectionString?: string;
    application_name?: string;
    idle_in_transaction_session_timeout?: number;
    /** How long connect() may take (and, for a Pool, how long to wait for a free client). */
    connectionTimeoutMillis?: number;
    /** Client-side limit per query: rejects with 'Query read timeout' when the server does not answer. */
    query_timeout?: number;
    keepAlive?: boolean;
    types?: CustomTypes;
  }

  export interface PoolConfig extends ClientConfig {
    max?: number;
    idleTimeoutMillis?: number;
    /** The class the pool makes its connections with (pg-pool: `new Client(poolConfig)`). */
    Client?: new (config: PoolConfig) => Client;
  }

  export interface FieldDef {
    name: string;
    dataTypeID: number;
  }

  export interface QueryResult<R> {
    rows: R[];
    rowCount: number | null;
    command: string;
    fields: FieldDef[];
  }

  export interface Queryable {
    query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>>;
  }

  export class Client implements Queryable {
    constructor(config?: ClientConfig | string);
    connect(): Promise<void>;
    /** The form pg-pool calls. */
    connect(callback: (err?: Error | null) => void): void;
    query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>>;
    end(): Promise<void>;
    on(event: 'error', listener: (err: Error) => void): this;
    on(event: 'end', listener: () => void): this;
    /** A NOTIFY on a channel this connection LISTENs to. */
    on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): this;
  }

  /** The connection a Submittable writes to (pg/lib/connection.js). */
  export interface Connection {
    /** Sends a simple-protocol Query message. */
    query(text: string): void;
    sendCopyFail(message: string): void;
  }

  /** pg-protocol's row description: one field per column. */
  export interface RowDescriptionMessage {
    fields: Array<{ name: string; dataTypeID: number; format: 'text' | 'binary' }>;
  }

  /** pg-protocol's data row: the columns' texts (null for SQL NULL). */
  export interface DataRowMessage {
    fields: unknown[];
  }

  /**
   * A query object of one's own (client.query(submittable) returns it): node-postgres calls its
   * handlers with the backend's messages; pg-cursor and pg-query-stream are built on it.
   */
  export interface Submittable {
    submit(connection: Connection): void;
  }

  export interface PoolClient extends Queryable {
    query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>>;
    query<S extends Submittable>(submittable: S): S;
    /** Returns the client to the pool; with an error (or true) the connection is destroyed instead. */
    release(destroy?: Error | boolean): void;
  }

  export class Pool implements Queryable {
    constructor(config?: PoolConfig);
    connect(): Promise<PoolClient>;
    query<R = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<R>>;
    end(): Promise<void>;
    on(event: 'error', listener: (err: Error, client: PoolClient) => void): this;
    readonly totalCount: number;
    readonly idleCount: number;
    readonly waitingCount: number;
    readonly ended: boolean;
  }

  /** An error reported by the server (SQLSTATE in `code`). */
  export class DatabaseError extends Error {
    code?: string;
    constraint?: string;
    table?: string;
    detail?: string;
    severity?: string;
  }

  export const types: CustomTypes;
  /** Parameter preparation (pg/lib/utils): the text node-postgres sends for a value, a Buffer as is. */
  export const utils: { prepareValue(value: unknown): string | Buffer | null | undefined };
  export function escapeIdentifier(value: string): string;
  export function escapeLiteral(value: string): string;
}
