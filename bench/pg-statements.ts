/**
 * What prepared statements save on PostgreSQL (issue 17, src/storage/postgresql/prepared.ts): the
 * user flows' read of a user by id (PgUsers.get, one TenantDb.statement) on the product's migrated
 * schema, through two PgStorage instances of one connection each, one with
 * STORAGE_POSTGRESQL_PREPARED_STATEMENTS=false (the text inlined, parsed and planned each time)
 * and one with the default (`EXECUTE` of the text prepared on the connection), in alternating
 * batches so a busy moment of the machine hits both. Prints, per round, the server's CPU (the
 * database's backends, from /proc) and this process's CPU per read, and the wall time per read.
 *   node dist/bench/pg-statements.js [rounds] [batch]      (defaults 3 and 10,000)
 * Needs the local PostgreSQL of the bench (services.ts); the scratch database is dropped at the end.
 */
import type { UserRecord } from '../src/storage/types.js';
import { PgStorage } from '../src/storage/postgresql/index.js';
import { processCpuMicros } from './cpu.js';
import { createMigratedDatabase } from './services.js';
import { backendPids, cpuOfPids, PG_SERVER } from './tenant-fleet.js';

const TENANT = 'default';
const USERS = 1000;
const rounds = Number(process.argv[2] ?? 3);
const batch = Number(process.argv[3] ?? 10_000);

function user(i: number): UserRecord {
  const at = new Date().toISOString();
  return {
    id: `u${i}`, email: `user${i}@example.com`, email_verified: true, username: null, given_name: 'Ada', family_name: 'Lovelace', name: 'Ada Lovelace',
    nickname: null, role: 'user', account_enabled: true, locked: false, locked_until: null, auth_provider: 'password', password_hash: null,
    mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null, deleted_at: null, created_at: at, updated_at: at, last_login_at: null,
  };
}

const db = await createMigratedDatabase('svc_pgstmt', PG_SERVER);
const open = (prepared_statements: boolean) => PgStorage.open({ url: db.url, pool_max: 1, statement_timeout_ms: 60_000, slow_query_ms: 0, prepared_statements });
const storages = { inlined: await open(false), prepared: await open(true) };
try {
  for (let i = 0; i < USERS; i++) await storages.inlined.users.create(TENANT, user(i));
  const serverCpu = async () => [...cpuOfPids(await backendPids(db.name), processCpuMicros).values()].reduce((a, b) => a + b, 0);

  /** Server CPU, client CPU and wall time, µs per read, of `batch` reads one after the other. */
  async function measure(storage: PgStorage): Promise<[number, number, number]> {
    const server = await serverCpu();
    const client = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < batch; i++) {
      if (!(await storage.users.get(TENANT, `u${i % USERS}`))) throw new Error(`user u${i % USERS} not found`);
    }
    const wall = ((performance.now() - started) * 1000) / batch;
    const used = process.cpuUsage(client);
    return [((await serverCpu()) - server) / batch, (used.user + used.system) / batch, wall];
  }

  await measure(storages.inlined);
  await measure(storages.prepared);
  console.log('round  variant    server CPU µs/read  client CPU µs/read  wall µs/read');
  for (let r = 1; r <= rounds; r++) {
    for (const [name, storage] of Object.entries(storages)) {
      const [server, client, wall] = await measure(storage);
      console.log(`${String(r).padStart(5)}  ${name.padEnd(9)}  ${server.toFixed(1).padStart(18)}  ${client.toFixed(1).padStart(18)}  ${wall.toFixed(1).padStart(12)}`);
    }
  }
} finally {
  await Promise.all(Object.values(storages).map((s) => s.close()));
  await db.drop();
}
