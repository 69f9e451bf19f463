/**
 * SIGTERM while requests are in flight (the service as `npm start` runs it, in its own process):
 * every request already accepted gets its answer, every write it made is kept and audited, usage
 * counters are flushed, and the process exits 0.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/app.js';
import { startInstance, type Instance } from '../helpers/instance.js';

const ID = 'shutdown-admin';
const SECRET = 'shutdown-secret-0123456789abcdef';

describe('graceful shutdown', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-shutdown-'));
  let instance: Instance | undefined;
  afterAll(async () => {
    await instance?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers every in-flight request, keeps and audits their writes, then exits 0', async () => {
    const db = join(dir, 'svc.db');
    instance = await startInstance('shutdown', await freePort(), {
      NODE_ENV: 'test',
      STORAGE_SQLITE_PATH: db,
      SVC_BOOTSTRAP_CLIENT_ID: ID,
      SVC_BOOTSTRAP_CLIENT_SECRET: SECRET,
      SECURITY_LOGGING_LEVEL: 'warn',
      SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
      SECURITY_RATE_LIMIT_WRITE: '1000',
    });
    const tokenRes = await fetch(`${instance.url}/oidc/v1/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${ID}:${SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:users:write' }),
    });
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };

    // Each user creation hashes a password with Argon2 (tens of milliseconds on the worker pool),
    // so most of these are still in flight when SIGTERM arrives.
    const N = 24;
    const creations = Array.from({ length: N }, (_, i) =>
      fetch(`${instance!.url}/api/v1/users`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: `drain${i}@example.com`, password: `Drain-password-${i}` }),
      }).then((r) => r.status),
    );
    // SIGTERM once the first user is stored: the others are then queued or hashing.
    const count = () => {
      let sqlite: InstanceType<typeof Database>;
      try {
        sqlite = new Database(db, { readonly: true });
      } catch {
        return 0; // a read-only open can fail while the service's WAL files are being created: poll again
      }
      try {
        return (sqlite.prepare("SELECT COUNT(*) AS n FROM users WHERE email LIKE 'drain%'").get() as { n: number }).n;
      } finally {
        sqlite.close();
      }
    };
    let before = 0;
    while ((before = count()) === 0) await new Promise((r) => setTimeout(r, 5));
    const running = instance;
    const stopping = running.stop();
    const statuses = await Promise.all(creations);
    await stopping;
    instance = undefined;
    expect(running.exitCode(), running.output()).toBe(0);

    expect(before).toBeLessThan(N); // some were still in flight at SIGTERM
    expect(statuses).toEqual(Array(N).fill(201));
    const sqlite = new Database(db, { readonly: true });
    try {
      const users = sqlite.prepare("SELECT COUNT(*) AS n FROM users WHERE email LIKE 'drain%'").get() as { n: number };
      const audited = sqlite.prepare("SELECT COUNT(*) AS n FROM audit_entries WHERE type = 'user.created'").get() as { n: number };
      const usage = sqlite.prepare('SELECT tokens_issued AS n FROM clients WHERE client_id = ?').get(ID) as { n: number };
      expect(users.n).toBe(N);
      expect(audited.n).toBe(N);
      expect(usage.n).toBe(1);
    } finally {
      sqlite.close();
    }
  });
});
