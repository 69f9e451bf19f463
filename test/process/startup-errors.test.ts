/**
 * Issue 18 item 11: a start-up failure names its cause (the file, the setting, the reason) in one
 * `fatal:` line and the process exits non-zero. SQLite and the listen socket here; PostgreSQL and
 * Redis in startup-errors-postgresql.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMain } from '../helpers/run-main.js';

const KEY = Buffer.alloc(32, 7).toString('base64');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-startup-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('start-up failures name their cause', () => {
  it('an SQLite path that cannot be opened: the path, STORAGE_SQLITE_PATH and the reason', async () => {
    // The parent "folder" is a regular file, so neither the folder nor the database can be made.
    const blocker = join(dir, 'not-a-folder');
    writeFileSync(blocker, 'x');
    const path = join(blocker, 'svc.db');
    const run = await runMain({ STORAGE_SQLITE_PATH: path, SVC_ENCRYPTION_KEY: KEY, PORT: '0' });
    expect(run.code, run.output).not.toBe(0);
    const fatal = run.output.split('\n').find((l) => l.startsWith('fatal:'));
    expect(fatal, run.output).toContain(`cannot open the SQLite database ${path} (STORAGE_SQLITE_PATH)`);
    expect(fatal).toMatch(/ENOTDIR|EEXIST/);
    expect(run.output).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('a folder given as the SQLite file: named, with the reason', async () => {
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    const run = await runMain({ STORAGE_SQLITE_PATH: folder, SVC_ENCRYPTION_KEY: KEY, PORT: '0' });
    expect(run.code, run.output).not.toBe(0);
    expect(run.output).toContain(`fatal: cannot open the SQLite database ${folder} (STORAGE_SQLITE_PATH): not a regular file (a directory)`);
  });

  it('a database written under another SVC_ENCRYPTION_KEY: the key that does not decrypt, the setting, no key material', async () => {
    const path = join(dir, 'rekeyed.db');
    const first = await runMain({ STORAGE_SQLITE_PATH: path, SVC_ENCRYPTION_KEY: KEY, PORT: '0' }, { until: /"listening"|listening on/ });
    expect(first.output).toMatch(/listening/);
    const other = Buffer.alloc(32, 9).toString('base64');
    const run = await runMain({ STORAGE_SQLITE_PATH: path, SVC_ENCRYPTION_KEY: other, PORT: '0' });
    expect(run.code, run.output).not.toBe(0);
    const fatal = run.output.split('\n').find((l) => l.startsWith('fatal:'));
    expect(fatal, run.output).toMatch(/^fatal: cannot decrypt the signing key \S+ of tenant default with SVC_ENCRYPTION_KEY: the database was written with another key/);
    expect(run.output).not.toContain(other);
    expect(run.output).not.toContain(KEY);
    expect(run.output).not.toMatch(/\n\s+at /);
  });

  it('a log directory that cannot be made: exit 78 naming SECURITY_LOGGING_FILE_LOGGING_DIRECTORY and the reason', async () => {
    const blocker = join(dir, 'log-blocker');
    writeFileSync(blocker, 'x');
    // /proc takes no new entries: Node's recursive mkdir looped there forever (no line, no listen).
    for (const [logDir, reason] of [['/proc/forbidden', /ENOENT/], [join(blocker, 'logs'), /ENOTDIR/]] as const) {
      const env = { NODE_ENV: 'production', BASE_URL: 'http://localhost', STORAGE_SQLITE_PATH: join(dir, 'logs.db'), SVC_ENCRYPTION_KEY: KEY, PORT: '0' };
      const run = await runMain({ ...env, SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'true', SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logDir }, { until: /listening/, maxMs: 20_000 });
      expect(run.code, run.output).toBe(78);
      const line = run.output.split('\n').find((l) => l.startsWith('configuration error:'));
      expect(line, run.output).toContain(`SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: cannot create or write the log directory ${logDir}`);
      expect(line).toMatch(reason);
    }
  });

  it('a port in use: the address and the cause (ListenError)', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = await runMain({ STORAGE_SQLITE_PATH: join(dir, 'listen.db'), SVC_ENCRYPTION_KEY: KEY, PORT: String(port) });
      expect(run.code, run.output).not.toBe(0);
      expect(run.output).toContain(`fatal: cannot listen on 127.0.0.1:${port}: the address is in use`);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});
