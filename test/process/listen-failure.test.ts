/**
 * A start that cannot listen rejects with ListenError and leaves nothing behind: no worker thread,
 * timer, socket or open database, so an embedding (or a test that retries on another port) can go
 * on in the same process.
 */
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { ListenError } from '../../src/http/server.js';

let dir: string;
let blocker: Server;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-listen-'));
  blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  port = (blocker.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => blocker.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const config = (p: number) =>
  loadConfig({
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(p),
    STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
    SECURITY_LOGGING_LEVEL: 'fatal',
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  });

/**
 * The handles of this process once worker threads that were asked to stop have stopped, and the
 * callbacks their exit scheduled (pino's transport emits its 'close' from an Immediate) have run.
 */
async function settledHandles(): Promise<string[]> {
  const deadline = Date.now() + 5000;
  const busy = () => process.getActiveResourcesInfo().some((h) => h === 'MessagePort' || h === 'Immediate');
  while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return process.getActiveResourcesInfo().sort();
}

/** Files of the test's folder this process holds open (Linux: /proc/self/fd). */
function openFilesInDir(): string[] {
  const open: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) open.push(target);
    } catch {
      // closed while we looked
    }
  }
  return open;
}

describe('a failed listen', () => {
  it('rejects with ListenError and releases what the start opened', async () => {
    // One full start and close first, so lazily created process-wide handles are in the baseline.
    const first = await startApp(config(0));
    await first.close();
    const before = await settledHandles();
    for (let i = 0; i < 3; i++) await expect(startApp(config(port))).rejects.toBeInstanceOf(ListenError);
    expect(await settledHandles()).toEqual(before);
    // The database (and its -wal/-shm) was closed, not left open once per attempt, and a new
    // start on it works.
    expect(openFilesInDir()).toEqual([]);
    const again = await startApp(config(0));
    await again.close();
  });
});
