/**
 * AES-256-GCM sealing of private keys and sensitive fields at rest (CONTRACT.md SVC_ENCRYPTION_KEY).
 * Sealed form: "v1.<iv>.<tag>.<ciphertext>" (base64url parts).
 */
import { keyFileFailed } from '../startup-errors.js';
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';

export class Sealer {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('encryption key must be 32 bytes');
  }

  seal(plain: string, aad = ''): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  unseal(sealed: string, aad = ''): string {
    const [v, iv, tag, ct] = sealed.split('.');
    if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('unrecognised sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Derived sub-key for a purpose (cursor signing, CSRF...), so the master key is used for one job only. */
  derive(purpose: string): Buffer {
    // One HMAC step is enough: the master key is uniformly random.
    return createHmac('sha256', this.key).update(`svc:${purpose}`).digest();
  }
}

/**
 * Where the development key of this configuration lives: beside the SQLite file and named after it
 * (`data/svc.db` -> `data/svc.db.encryption-key`), so two databases in one folder never share a
 * key by accident; on PostgreSQL in development, `data/postgresql.encryption-key`.
 */
export function developmentKeyFile(config: Config): string {
  const { adapter, sqlite } = config.storage;
  if (adapter === 'sqlite' && sqlite.path !== ':memory:') return `${resolve(sqlite.path)}.encryption-key`;
  return join(resolve('data'), `${adapter === 'sqlite' ? 'memory' : adapter}.encryption-key`);
}

function readKey(file: string): Buffer | undefined {
  if (!existsSync(file)) return undefined;
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  return key.length === 32 ? key : undefined;
}

/**
 * The key from SVC_ENCRYPTION_KEY; in development only, one generated once into the data folder.
 * (Config validation already refused production/staging without it.) A key that earlier versions
 * wrote under the generic name `encryption.key` beside the database is moved to the new name, so
 * existing development data stays readable.
 */
export function loadEncryptionKey(config: Config, log: Logger): Buffer {
  if (config.svc.encryption_key) return Buffer.from(config.svc.encryption_key, 'base64');
  const file = developmentKeyFile(config);
  const legacy = join(dirname(file), 'encryption.key');
  if (!existsSync(file) && config.storage.adapter === 'sqlite' && readKey(legacy)) {
    renameSync(legacy, file);
    log.warn({ file, from: legacy }, 'moved the development encryption key to a name tied to its database');
  }
  const existing = readKey(file);
  if (existing) {
    log.warn({ file }, 'SVC_ENCRYPTION_KEY is not set: using the development key from the data folder (never do this in production)');
    return existing;
  }
  const key = randomBytes(32);
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600 });
  } catch (err) {
    throw keyFileFailed(file, err);
  }
  log.warn({ file }, 'SVC_ENCRYPTION_KEY is not set: generated a development key into the data folder (never do this in production)');
  return key;
}
