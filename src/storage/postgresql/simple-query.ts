/**
 * A simple-protocol query as a node-postgres Submittable (client.query(submittable): the extension
 * point pg-cursor and pg-query-stream are built on), for statement()'s prepared `EXECUTE` on the
 * user flows' reads (issue 17: userinfo, refresh and silent re-authentication on PostgreSQL).
 *
 * Why not pg's own Query: for every result it builds a null-prototype object of the column names
 * and spreads it twice (Result.addFields, then parseRow per row), which V8 can only copy on its
 * slow path, and asks the type configuration for a parser per column, which for timestamps makes a
 * new closure each time. A perf profile of userinfo on PostgreSQL put those copies at ~9% of the
 * event loop and the row description's handling at another ~7%. Here a row is an object literal
 * filled in column order, and the parsers are looked up once per type.
 *
 * Same answers: the rows and row count of every result in order, values parsed by the pool's
 * type configuration (pool.ts TYPES); errors are pg's own (a DatabaseError for an ErrorResponse,
 * node-postgres's errors for a connection that is gone or a read timeout), delivered once.
 */
import type { Connection, DataRowMessage, RowDescriptionMessage, Submittable, TypeParser } from 'pg';
import { TYPES } from './pool.js';

export interface SimpleResult<R> {
  rows: R[];
  rowCount: number;
}

/** The pool's parser of each type, looked up once (a lookup can make a closure: pool.ts). */
const parsers = new Map<number, TypeParser>();
function parserOf(oid: number): TypeParser {
  let parser = parsers.get(oid);
  if (parser === undefined) parsers.set(oid, (parser = TYPES.getTypeParser(oid, 'text')));
  return parser;
}

/** The row count of a command tag (`SELECT 1`, `UPDATE 3`, `INSERT 0 1`); 0 for tags without one. */
function tagCount(tag: string): number {
  const n = Number(tag.slice(tag.lastIndexOf(' ') + 1));
  return Number.isInteger(n) ? n : 0;
}

class SimpleQuery<R> implements Submittable {
  /** Set by run(); node-postgres wraps it for its read timeout. */
  callback: (err: Error | null, results?: Array<SimpleResult<R>>) => void = () => undefined;
  private readonly results: Array<SimpleResult<R>> = [];
  private names: string[] = [];
  private columnParsers: TypeParser[] = [];
  private rows: R[] = [];
  private settled = false;

  constructor(private readonly text: string) {}

  submit(connection: Connection): void {
    connection.query(this.text);
  }

  handleRowDescription(msg: RowDescriptionMessage): void {
    // Binary columns never come back here: the simple protocol answers in text.
    this.names = msg.fields.map((f) => f.name);
    this.columnParsers = msg.fields.map((f) => parserOf(f.dataTypeID));
  }

  handleDataRow(msg: DataRowMessage): void {
    const row: Record<string, unknown> = {};
    const values = msg.fields;
    for (let i = 0; i < values.length; i++) {
      const raw = values[i] as string | null;
      row[this.names[i]!] = raw === null ? null : this.columnParsers[i]!(raw);
    }
    this.rows.push(row as R);
  }

  handleCommandComplete(msg: { text: string }): void {
    // A statement without rows (SET) sends no row description: its result is empty.
    this.results.push({ rows: this.rows, rowCount: tagCount(msg.text) });
    this.rows = [];
  }

  handleEmptyQuery(): void {}

  handleError(err: Error): void {
    this.settle(err);
  }

  handleReadyForQuery(): void {
    this.settle(null);
  }

  /** What pg's Query does for a COPY it was not asked for: refuse it, and the server ends it with an error. */
  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail('No source stream defined');
  }

  handleCopyData(): void {}

  handlePortalSuspended(): void {}

  private settle(err: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    if (err) this.callback(err);
    else this.callback(null, this.results);
  }
}

/** Runs `text` (one or more statements, simple protocol) on `client`: every result, in order. */
export function runSimple<R>(client: { query(submittable: Submittable): unknown }, text: string): Promise<Array<SimpleResult<R>>> {
  return new Promise((resolve, reject) => {
    const query = new SimpleQuery<R>(text);
    query.callback = (err, results) => (err ? reject(err) : resolve(results!));
    client.query(query);
  });
}
