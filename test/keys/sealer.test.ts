import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Sealer, loadEncryptionKey } from '../../src/keys/sealer.js';
import type { Logger } from '../../src/log.js';

const key = Buffer.alloc(32, 9);

describe('Sealer', () => {
  const sealer = new Sealer(key);

  it('round-trips text with its associated data', () => {
    const sealed = sealer.seal('{"d":"private key"}', 'default:kid1');
    expect(sealed.startsWith('v1.')).toBe(true);
    expect(sealed.split('.')).toHaveLength(4);
    expect(sealed).not.toContain('private key');
    expect(sealer.unseal(sealed, 'default:kid1')).toBe('{"d":"private key"}');
    expect(sealer.unseal(sealer.seal(''), '')).toBe('');
    expect(sealer.unseal(sealer.seal('h\u00e9llo \u{1F511}'))).toBe('h\u00e9llo \u{1F511}');
  });

  it('uses a fresh IV each time', () => {
    expect(sealer.seal('same', 'aad')).not.toBe(sealer.seal('same', 'aad'));
  });

  it('refuses other associated data (a value moved to another row or tenant)', () => {
    const sealed = sealer.seal('secret', 'tenant-a:kid');
    expect(() => sealer.unseal(sealed, 'tenant-b:kid')).toThrow();
    expect(() => sealer.unseal(sealed)).toThrow();
  });

  it('refuses a tampered ciphertext, tag or IV', () => {
    const [v, iv, tag, ct] = sealer.seal('secret value', 'x').split('.') as [string, string, string, string];
    const flip = (s: string) => {
      const b = Buffer.from(s, 'base64url');
      b[0] = b[0]! ^ 1;
      return b.toString('base64url');
    };
    expect(() => sealer.unseal([v, iv, tag, flip(ct)].join('.'), 'x')).toThrow();
    expect(() => sealer.unseal([v, iv, flip(tag), ct].join('.'), 'x')).toThrow();
    expect(() => sealer.unseal([v, flip(iv), tag, ct].join('.'), 'x')).toThrow();
  });

  it('refuses another key and unknown formats', () => {
    const sealed = sealer.seal('secret');
    expect(() => new Sealer(Buffer.alloc(32, 8)).unseal(sealed)).toThrow();
    expect(() => sealer.unseal(sealed.replace(/^v1\./, 'v2.'))).toThrow(/unrecognised/);
    expect(() => sealer.unseal('plain text')).toThrow(/unrecognised/);
  });

  it('needs a 32-byte key', () => {
    expect(() => new Sealer(Buffer.alloc(16))).toThrow(/32 bytes/);
    expect(() => new Sealer(Buffer.alloc(33))).toThrow(/32 bytes/);
  });

  it('derives stable, distinct 32-byte sub-keys per purpose and master key', () => {
    const a = sealer.derive('cursors');
    expect(a).toHaveLength(32);
    expect(sealer.derive('cursors').equals(a)).toBe(true);
    expect(sealer.derive('cookies:default').equals(a)).toBe(false);
    expect(new Sealer(Buffer.alloc(32, 8)).derive('cursors').equals(a)).toBe(false);
    expect(a.equals(key)).toBe(false);
  });
});

describe('loadEncryptionKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-sealer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const logger = () => ({ warn: vi.fn(), info: vi.fn(), error: vi.fn() }) as unknown as Logger & { warn: ReturnType<typeof vi.fn> };

  it('uses SVC_ENCRYPTION_KEY when set and writes nothing', () => {
    const sub = join(dir, 'configured');
    const config = loadConfig({ SVC_ENCRYPTION_KEY: key.toString('base64'), STORAGE_SQLITE_PATH: join(sub, 'svc.db') });
    const log = logger();
    expect(loadEncryptionKey(config, log).equals(key)).toBe(true);
    expect(() => statSync(join(sub, 'svc.db.encryption-key'))).toThrow();
    expect(log.warn).not.toHaveBeenCalled();
  });

  it('in development generates a key once into the data folder, with a warning each time', () => {
    const sub = join(dir, 'dev');
    const config = loadConfig({ STORAGE_SQLITE_PATH: join(sub, 'svc.db') });
    const log1 = logger();
    const first = loadEncryptionKey(config, log1);
    expect(first).toHaveLength(32);
    const file = join(sub, 'svc.db.encryption-key');
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').equals(first)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(log1.warn).toHaveBeenCalledTimes(1);

    const log2 = logger();
    expect(loadEncryptionKey(config, log2).equals(first)).toBe(true);
    expect(log2.warn).toHaveBeenCalledTimes(1);
  });

  it('replaces a development key file that does not hold 32 bytes', () => {
    const sub = join(dir, 'corrupt');
    const config = loadConfig({ STORAGE_SQLITE_PATH: join(sub, 'svc.db') });
    loadEncryptionKey(config, logger());
    writeFileSync(join(sub, 'svc.db.encryption-key'), 'c2hvcnQ=\n');
    const key2 = loadEncryptionKey(config, logger());
    expect(key2).toHaveLength(32);
    expect(new Sealer(key2).unseal(new Sealer(key2).seal('ok'))).toBe('ok');
  });

  it('names the key after its database, so two databases in one folder get two keys', () => {
    const sub = join(dir, 'two');
    const a = loadEncryptionKey(loadConfig({ STORAGE_SQLITE_PATH: join(sub, 'a.db') }), logger());
    const b = loadEncryptionKey(loadConfig({ STORAGE_SQLITE_PATH: join(sub, 'b.db') }), logger());
    expect(a.equals(b)).toBe(false);
    expect(() => statSync(join(sub, 'encryption.key'))).toThrow();
    expect(statSync(join(sub, 'a.db.encryption-key')).isFile()).toBe(true);
  });

  it('moves a key an earlier version wrote as encryption.key, keeping old data readable', () => {
    const sub = join(dir, 'legacy');
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, 'encryption.key'), key.toString('base64') + '\n', { mode: 0o600 });
    const config = loadConfig({ STORAGE_SQLITE_PATH: join(sub, 'svc.db') });
    expect(loadEncryptionKey(config, logger()).equals(key)).toBe(true);
    expect(() => statSync(join(sub, 'encryption.key'))).toThrow();
    expect(loadEncryptionKey(config, logger()).equals(key)).toBe(true);
  });
});
