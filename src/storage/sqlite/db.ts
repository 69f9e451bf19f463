/** Opens the SQLite file (WAL) and applies migrations/sqlite/*.sql that are not applied yet. */
import { closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { everyWordCondition } from '../search.js';
import type { Page, PageRequest } from '../types.js';
import { MIGRATIONS_DIR } from '../../paths.js';

export type Db = Database.Database;

export function openSqlite(path: string): Db {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true });
    ownerOnlyFile(path);
  }
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

/**
 * Owner-only: the file holds sealed keys, hashes and audit data (issue 12 item 10). Created 0600
 * before SQLite opens it (SQLite gives its -wal and -shm files the same mode), and an existing file
 * is narrowed too, through the descriptor that was checked. Anything but a regular file is refused
 * before it is opened for writing or narrowed: narrowing `/dev/null` (a service run as root) broke
 * every other program on the machine, and opening a FIFO for writing waits for a reader forever.
 */
function ownerOnlyFile(path: string): void {
  const existing = statSync(path, { throwIfNoEntry: false });
  if (existing) regularFile(existing);
  // O_NONBLOCK: a FIFO put in its place since the check fails (ENXIO) instead of waiting.
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, 0o600);
  try {
    regularFile(fstatSync(fd));
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

function regularFile(st: Stats): void {
  if (!st.isFile()) throw new Error(`not a regular file (${kindOf(st)})`);
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'not a file';
}

export function migrate(db: Db): string[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as string[]);
  const dir = join(MIGRATIONS_DIR, 'sqlite');
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  const done: string[] = [];
  for (const file of files) {
    const version = file.replace(/\.sql$/, '');
    if (applied.has(version)) continue;
    const sql = readFileSync(join(dir, file), 'utf8');
    // Processes opening a new file at once (`svc keys generate` run three times) all find the
    // migration pending: IMMEDIATE takes the write lock before the re-check, so one applies it
    // and the others, waiting on busy_timeout, find it applied ("table already exists" otherwise).
    const applies = db.transaction(() => {
      if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(version)) return false;
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(version, new Date().toISOString());
      return true;
    }).immediate();
    if (applies) done.push(version);
  }
  return done;
}

/** Distinct SQL texts kept prepared per connection (list filters combine into a few dozen). */
export const STATEMENT_CACHE_SIZE = 256;

const statements = new WeakMap<Db, Map<string, Database.Statement<unknown[], unknown>>>();

/**
 * `db.prepare(sql)`, prepared once per connection and SQL text and reused afterwards (a
 * better-sqlite3 statement is reusable; preparing is a good part of a short query's cost). For the
 * statements whose text is built per call (list filters, partial updates); fixed ones are prepared
 * in the repositories' constructors. Least recently used texts beyond STATEMENT_CACHE_SIZE are
 * dropped. A reader comes back with pluck off: a caller wanting it calls `.pluck()` each time.
 */
export function prepared<BindParameters extends unknown[] | {} = unknown[], Result = unknown>(
  db: Db,
  sql: string,
): BindParameters extends unknown[] ? Database.Statement<BindParameters, Result> : Database.Statement<[BindParameters], Result> {
  let cache = statements.get(db);
  if (!cache) statements.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (stmt) {
    // Most recently used last: the first key is the one to drop.
    cache.delete(sql);
    if (stmt.reader) stmt.pluck(false);
  } else {
    stmt = db.prepare(sql);
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  cache.set(sql, stmt);
  return stmt as never;
}

/** The `q` condition (storage/search.ts) with SQLite's named parameters `@q0`, `@q1`, ... added to `params`. */
export function searchCondition(q: string, columns: readonly string[], params: Record<string, unknown>): string {
  let i = 0;
  return everyWordCondition(q, columns, 'LIKE', (pattern) => {
    const name = `q${i++}`;
    params[name] = pattern;
    return `@${name}`;
  });
}

export interface KeysetQuery {
  table: string;
  columns: string;
  /** Filter (without the cursor condition) and its named parameters. */
  where: string;
  params: Record<string, unknown>;
  /** Sort key: a timestamp column and a unique id column. */
  sortKey: [string, string];
  /** Newest first (the cursor then walks backwards). */
  descending?: boolean;
}

/**
 * One page of a keyset-paginated listing: rows after the cursor in sort-key order, one extra row
 * fetched to know whether more follow, and the whole filtered count when asked for.
 */
export function keysetPage<R>(db: Db, q: KeysetQuery, page: PageRequest): Page<R> {
  const [time, id] = q.sortKey;
  const dir = q.descending ? 'DESC' : 'ASC';
  let where = q.where;
  const pageParams = { ...q.params };
  if (page.after) {
    where += ` AND (${time}, ${id}) ${q.descending ? '<' : '>'} (@after_t, @after_id)`;
    pageParams.after_t = page.after.created_at;
    pageParams.after_id = page.after.id;
  }
  // The limit is a parameter, so one statement serves every page size of a filter.
  pageParams.keyset_limit = page.limit + 1;
  const rows = prepared<Record<string, unknown>, R>(db, `SELECT ${q.columns} FROM ${q.table} WHERE ${where} ORDER BY ${time} ${dir}, ${id} ${dir} LIMIT @keyset_limit`).all(pageParams);
  const result: Page<R> = { items: rows.slice(0, page.limit), has_more: rows.length > page.limit };
  if (page.include_count) {
    result.total_count = prepared<Record<string, unknown>, number>(db, `SELECT count(*) FROM ${q.table} WHERE ${q.where}`).pluck().get(q.params) ?? 0;
  }
  return result;
}
