/**
 * The SQLite file is made owner-only (0600) when the service opens it, created or narrowed, and
 * nothing but a regular file is touched: a device, FIFO or socket given as STORAGE_SQLITE_PATH is
 * refused with its kind, its mode left as it was. Run as root, the service once narrowed /dev/null
 * to 0600 and broke every other program on the machine; a FIFO made the start wait forever.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/storage/sqlite/db.js';

const dir = mkdtempSync(join(tmpdir(), 'svc-sqlite-mode-'));
const mode = (path: string) => statSync(path).mode & 0o777;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('openSqlite and the file it is given', () => {
  it('creates a new file 0600 and narrows an existing one, also through a symlink', () => {
    const created = join(dir, 'new.db');
    openSqlite(created).close();
    expect(mode(created)).toBe(0o600);

    const wide = join(dir, 'wide.db');
    writeFileSync(wide, '', { mode: 0o644 });
    const link = join(dir, 'link.db');
    symlinkSync(wide, link);
    openSqlite(link).close();
    expect(mode(wide)).toBe(0o600);
  });

  it('refuses a FIFO before opening it (a writer would wait for a reader), its mode unchanged', () => {
    const fifo = join(dir, 'fifo.db');
    execFileSync('mkfifo', ['-m', '0644', fifo]);
    // A reader held open, so that a regression fails here instead of hanging the run.
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      expect(() => openSqlite(fifo)).toThrow('not a regular file (a FIFO)');
    } finally {
      closeSync(reader);
    }
    expect(mode(fifo)).toBe(0o644);
  });

  it('refuses a character device, its mode unchanged', () => {
    // A node of its own (the null device's numbers), never /dev/null itself: a failing run would
    // narrow it. CI runs as root, which mknod needs.
    const device = join(dir, 'null.db');
    execFileSync('mknod', ['-m', '0666', device, 'c', '1', '3']);
    expect(() => openSqlite(device)).toThrow('not a regular file (a device)');
    expect(mode(device)).toBe(0o666);
  });

  it('refuses a socket and a directory', async () => {
    const sock = join(dir, 'sock.db');
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      expect(() => openSqlite(sock)).toThrow('not a regular file (a socket)');
    } finally {
      server.close();
    }
    expect(() => openSqlite(dir)).toThrow('not a regular file (a directory)');
  });
});
