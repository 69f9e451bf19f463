/**
 * What grouping reads saves on SQLite (issue 17, Storage.readTogether): three primary-key reads of
 * OIDC artefacts on the product's own schema (SqliteStorage on a temporary file, WAL), one by one
 * and inside one readTogether, in alternating batches so a busy moment of the machine hits both.
 * Prints the CPU µs per group of three for each, per round.
 *   node dist/bench/sqlite-reads.js [rounds] [batch]      (defaults 5 and 50,000)
 *
 * Outside a transaction each statement takes and drops the WAL read lock itself (two fcntl calls
 * and an fstat); inside one, the lock is taken once. No HTTP, no load generator: only the storage.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStorage } from '../src/storage/sqlite/index.js';

const ROWS = 20_000;
const rounds = Number(process.argv[2] ?? 5);
const batch = Number(process.argv[3] ?? 50_000);

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-reads-'));
const storage = SqliteStorage.open(join(dir, 'svc.db'));
try {
  const expires = Math.floor(Date.now() / 1000) + 3600;
  await Promise.all(Array.from({ length: ROWS }, (_, i) => storage.oidc.upsert('default', 'Grant', `g${i}`, { jti: `g${i}`, accountId: `u${i}`, openid: { scope: 'openid email profile' } }, expires)));
  const three = (i: number) => Promise.all([0, 7, 13].map((k) => storage.oidc.find('default', 'Grant', `g${(i + k) % ROWS}`)));

  /** CPU µs per group of three reads, `together` or one by one. */
  async function measure(together: boolean): Promise<number> {
    const start = process.cpuUsage();
    for (let i = 0; i < batch; i++) await (together ? storage.readTogether(() => three(i)) : three(i));
    const used = process.cpuUsage(start);
    return (used.user + used.system) / batch;
  }

  await measure(false);
  await measure(true);
  console.log('round  one by one (µs/3 reads)  together (µs/3 reads)');
  for (let r = 1; r <= rounds; r++) {
    const alone = await measure(false);
    const grouped = await measure(true);
    console.log(`${String(r).padStart(5)}  ${alone.toFixed(2).padStart(24)}  ${grouped.toFixed(2).padStart(21)}`);
  }
} finally {
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
}
