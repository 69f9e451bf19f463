/**
 * The file log (security.logging.file_logging, src/log.ts prepareLogDirectory) can hold what only
 * the operator may read (in development, password-reset links): svc.log is created 0600 and each
 * directory the service creates for it 0700, like the SQLite file and the development key; what
 * already exists keeps the mode its owner gave it.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareLogDirectory } from '../../src/log.js';

const mode = (path: string) => statSync(path).mode & 0o777;

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-log-modes-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('file log modes', () => {
  it('creates svc.log 0600 and the directories it makes 0700', () => {
    const dir = prepareLogDirectory(join(root, 'made', 'by', 'svc'));
    expect(mode(join(dir, 'svc.log'))).toBe(0o600);
    for (const d of [join(root, 'made'), join(root, 'made', 'by'), dir]) expect(mode(d), d).toBe(0o700);
  });

  it('never changes a directory the operator made, nor an existing svc.log', () => {
    const own = join(root, 'operator');
    mkdirSync(own);
    chmodSync(own, 0o750);
    prepareLogDirectory(own);
    expect(mode(own)).toBe(0o750);
    expect(mode(join(own, 'svc.log'))).toBe(0o600);

    const kept = join(root, 'kept');
    mkdirSync(kept);
    writeFileSync(join(kept, 'svc.log'), '');
    chmodSync(join(kept, 'svc.log'), 0o640);
    prepareLogDirectory(kept);
    expect(mode(join(kept, 'svc.log'))).toBe(0o640);
  });
});
