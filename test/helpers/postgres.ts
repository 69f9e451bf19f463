/**
 * A PostgreSQL database of its own for each test file (CREATE DATABASE svc_test_<random> on
 * 127.0.0.1:5432 as postgres, trust auth), dropped afterwards, so parallel runs never collide.
 * Roles are cluster-wide: svc_app / svc_maintenance are shared by every test database (the
 * migrations create them once); test login roles get random names and are dropped too.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createScratchDatabase, DEFAULT_PG_SERVER, migratedTemplate, onPgServer } from '../../bench/services.js';
import { PgStorage, type PgLog } from '../../src/storage/postgresql/index.js';

export const PG_SERVER = DEFAULT_PG_SERVER;

export interface TestDatabase {
  name: string;
  /** Logs in as postgres (superuser, the schema owner): what `svc migrate` uses. */
  url: string;
  /** A connection as postgres to this database (bypasses RLS: setup and inspection only). */
  admin(): Promise<pg.Client>;
  drop(): Promise<void>;
}

const onServer = <T>(fn: (c: pg.Client) => Promise<T>) => onPgServer(PG_SERVER, fn);

/** A scratch database (bench/services.ts, shared with the benches) plus an admin connection for inspection. */
export async function createTestDatabase(template?: string): Promise<TestDatabase> {
  const db = await createScratchDatabase('svc_test', PG_SERVER, template);
  return {
    ...db,
    async admin() {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      return c;
    },
  };
}

/** A database with this build's migrations applied: a copy of the migrated template (bench/services.ts). */
export async function migratedDatabase(): Promise<TestDatabase> {
  return createTestDatabase(await migratedTemplate(PG_SERVER));
}

export const pgSettings = (url: string, over: Partial<{ pool_max: number; statement_timeout_ms: number; slow_query_ms: number; connect_timeout_ms: number; prepared_statements: boolean }> = {}) => ({
  url,
  pool_max: 10,
  statement_timeout_ms: 5000,
  slow_query_ms: 0,
  ...over,
});

export function openPg(url: string, over: Parameters<typeof pgSettings>[1] = {}, log?: PgLog): Promise<PgStorage> {
  return PgStorage.open(pgSettings(url, over), log);
}

/** A LOGIN role (no superuser, no BYPASSRLS) that is a member of svc_app, like a production login. */
export async function createLoginRole(): Promise<{ name: string; urlFor(database: string): string; drop(): Promise<void> }> {
  const name = `svc_login_${randomBytes(5).toString('hex')}`;
  await onServer((c) => c.query(`CREATE ROLE ${pg.escapeIdentifier(name)} LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE svc_app`));
  return {
    name,
    urlFor: (database) => `postgres://${name}@127.0.0.1:5432/${database}`,
    drop: () => onServer((c) => c.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(name)}`)).then(() => undefined),
  };
}

// ---------------------------------------------------------------------------------------------
// A private PostgreSQL cluster (fault tests): initdb into a temp dir, a spare port on 127.0.0.1,
// trust auth, no fsync; the test stops, freezes and starts it at will.

export interface PrivatePostgres {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres (superuser: what `svc migrate` uses). */
  url: string;
  /** Starts the server (again) and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops the server: `fast` (clean shutdown) or `immediate` (like a crash; WAL recovery on start). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Freezes / thaws every server process (SIGSTOP / SIGCONT): sockets stay open, nothing answers. */
  pause(): void;
  resume(): void;
  /** Stops the server and deletes the cluster. */
  destroy(): Promise<void>;
}

/** The directory of initdb and pg_ctl: PG_BINDIR, the newest /usr/lib/postgresql/<v>/bin, or PATH. */
function pgBinDir(): string {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a)) : [];
  return versions[0] ? join(root, versions[0], 'bin') : '';
}

/** initdb and postgres refuse to run as root: then they run as the `postgres` user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function run(bin: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(user ?? {}) });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${bin} ${args.join(' ')} exited ${code}: ${stderr.trim()}`))));
  });
}

/** Signals each process; one that exited since it was listed (a backend ending) is skipped. */
function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
}

/** The postmaster and its children (backends, checkpointer, ...). */
function serverPids(dataDir: string): number[] {
  let postmaster: number;
  try {
    postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return [];
  }
  const pids = [postmaster];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the parent pid (after "pid (comm) state").
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) pids.push(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  return pids;
}

export async function privatePostgres(port: number): Promise<PrivatePostgres> {
  const bin = pgBinDir();
  const tool = (name: string) => (bin ? join(bin, name) : name);
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  await run(tool('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'], user);
  // Only TCP on 127.0.0.1 (no Unix socket), no fsync: a test cluster, started and stopped often.
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c fsync=off -c full_page_writes=off -c max_connections=40`;
  let running = false;
  const ctl = (args: string[]) => run(tool('pg_ctl'), ['-D', data, ...args], user);
  const stopNow = () => {
    // Synchronous, for process exit: a crashed test worker must not leave the server behind.
    if (running) spawnSync(tool('pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], { stdio: 'ignore', ...(user ?? {}) });
    running = false;
  };
  process.once('exit', () => {
    for (const pid of serverPids(data)) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
    }
    stopNow();
    rmSync(dir, { recursive: true, force: true });
  });
  const pg: PrivatePostgres = {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async start() {
      if (running) return;
      await ctl(['-o', serverOptions, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start']);
      running = true;
    },
    async stop(mode = 'fast') {
      if (!running) return;
      await ctl(['-m', mode, '-w', '-t', '30', 'stop']);
      running = false;
    },
    pause() {
      signalAll(serverPids(data), 'SIGSTOP');
    },
    resume() {
      signalAll(serverPids(data), 'SIGCONT');
    },
    async destroy() {
      pg.resume();
      await pg.stop('immediate').catch(() => stopNow());
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await pg.start();
  return pg;
}
