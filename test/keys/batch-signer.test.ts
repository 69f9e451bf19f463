/**
 * RS256 signatures on libuv's threadpool, handed over at the end of the turn (signOnPool): each
 * answered with its own key, a failure alone, also when asked for during a check phase.
 * ES256 and EdDSA signatures in batches on worker threads (src/keys/batch-signer.ts): every
 * signature verifies with its own key whatever batch it rode in, a bad input fails alone, a thread
 * that dies fails what it held and is replaced, a missing task file falls back to libuv's pool,
 * and idle threads never keep a process alive.
 */
import { execFile } from 'node:child_process';
import { createSecretKey, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { BatchSigner, SIGNER_WORKER_FILE, signOnPool } from '../../src/keys/batch-signer.js';
import { PROJECT_ROOT } from '../../src/paths.js';

const ec = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = () => generateKeyPairSync('ed25519');

function verifies(hash: string | null, input: string, signature: string, publicKey: KeyObject): boolean {
  return verify(hash, Buffer.from(input, 'latin1'), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
}

const dir = mkdtempSync(join(tmpdir(), 'batch-signer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("signOnPool: RS256 on libuv's threadpool, handed over at the turn's end", () => {
  const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });

  it('signs every input requested in one turn, each with its own key', async () => {
    const pairs = [rsa(), rsa()];
    const inputs = Array.from({ length: 12 }, (_, i) => `header.payload-${i}`);
    const signatures = await Promise.all(inputs.map((input, i) => signOnPool('sha256', input, pairs[i % 2]!.privateKey)));
    signatures.forEach((signature, i) => {
      expect(verifies('sha256', inputs[i]!, signature, pairs[i % 2]!.publicKey)).toBe(true);
      expect(verifies('sha256', inputs[i]!, signature, pairs[(i + 1) % 2]!.publicKey)).toBe(false);
    });
  });

  it('fails only the signature that cannot be made, whether it fails at once or on the pool', async () => {
    const good = rsa();
    const results = await Promise.allSettled([
      signOnPool('sha256', 'a.b', good.privateKey),
      // A secret key and a public key are refused before the job starts (node:crypto throws at
      // once): the signatures handed over after them in the same turn still go.
      signOnPool('sha256', 'c.d', createSecretKey(randomBytes(32))),
      signOnPool('sha256', 'e.f', good.publicKey),
      signOnPool('sha256', 'g.h', good.privateKey),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(verifies('sha256', 'g.h', (results[3] as PromiseFulfilledResult<string>).value, good.publicKey)).toBe(true);
  });

  it('answers a signature asked for during a check phase (handed over at the next one)', async () => {
    const pair = rsa();
    const signature = await new Promise<string>((resolve, reject) => setImmediate(() => signOnPool('sha256', 'x.y', pair.privateKey).then(resolve, reject)));
    expect(verifies('sha256', 'x.y', signature, pair.publicKey)).toBe(true);
  });
});

describe('BatchSigner', () => {
  it('signs many inputs of several keys requested in one turn, each with its own key, on at most its threads', async () => {
    const signer = new BatchSigner(SIGNER_WORKER_FILE, 2);
    const tenants = [{ hash: 'sha256', ...ec() }, { hash: null, ...ed() }, { hash: 'sha256', ...ec() }];
    const jobs = Array.from({ length: 60 }, (_, i) => ({ t: tenants[i % 3]!, input: `header.payload-${i}` }));
    const signatures = await Promise.all(jobs.map((j) => signer.sign(j.t.hash, j.input, j.t.privateKey)));
    expect(signer.running).toBe(2);
    jobs.forEach((j, i) => {
      expect(verifies(j.t.hash, j.input, signatures[i]!, j.t.publicKey)).toBe(true);
      // Never under another tenant's key.
      const other = tenants[(i + 1) % 3]!;
      if (other.hash === j.t.hash) expect(verifies(j.t.hash, j.input, signatures[i]!, other.publicKey)).toBe(false);
    });
    // ES256 in the JWS form (r || s, 64 bytes), not DER.
    expect(Buffer.from(signatures[0]!, 'base64url')).toHaveLength(64);
  });

  it('fails only the input that cannot be signed; the rest of its batch is signed', async () => {
    const signer = new BatchSigner(SIGNER_WORKER_FILE, 1);
    const good = ec();
    const results = await Promise.allSettled([
      signer.sign('sha256', 'a.b', good.privateKey),
      // A public key cannot sign.
      signer.sign('sha256', 'c.d', good.publicKey),
      signer.sign('sha256', 'e.f', good.privateKey),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(Error);
    expect(verifies('sha256', 'e.f', (results[2] as PromiseFulfilledResult<string>).value, good.publicKey)).toBe(true);
  });

  it('fails what a dying thread held, then starts another for the next batch', async () => {
    // A task file that exits on its first batch and signs nothing.
    const crashing = join(dir, 'crashing.mjs');
    const marker = join(dir, 'started');
    writeFileSync(
      crashing,
      `import { parentPort } from 'node:worker_threads'; import { appendFileSync } from 'node:fs';
       appendFileSync(${JSON.stringify(marker)}, 'x');
       parentPort.on('message', () => process.exit(3));`,
    );
    const signer = new BatchSigner(crashing, 1);
    const key = ec().privateKey;
    await expect(signer.sign('sha256', 'a.b', key)).rejects.toThrow(/exited \(code 3\)/);
    expect(signer.running).toBe(0);
    await expect(signer.sign('sha256', 'c.d', key)).rejects.toThrow(/exited/);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(marker, 'utf8')).toBe('xx');
  });

  it("signs on libuv's threadpool when the compiled task file is missing", async () => {
    const signer = new BatchSigner(join(dir, 'missing.js'), 2);
    const pair = ed();
    const signature = await signer.sign(null, 'x.y', pair.privateKey);
    expect(verifies(null, 'x.y', signature, pair.publicKey)).toBe(true);
    expect(signer.running).toBe(0);
  });

  it('lets a process exit once its signatures are answered (idle threads hold nothing open)', async () => {
    const script = join(dir, 'exits.mjs');
    const module = pathToFileURL(join(PROJECT_ROOT, 'dist', 'src', 'keys', 'batch-signer.js')).href;
    writeFileSync(
      script,
      `import { generateKeyPairSync } from 'node:crypto';
       const { BatchSigner, SIGNER_WORKER_FILE } = await import(${JSON.stringify(module)});
       const signer = new BatchSigner(SIGNER_WORKER_FILE, 2);
       const { privateKey } = generateKeyPairSync('ed25519');
       const sig = await signer.sign(null, 'a.b', privateKey);
       console.log(signer.running, sig.length);`,
    );
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 10_000 });
    // Two threads ran, an Ed25519 signature is 64 bytes (86 base64url characters), and the process
    // ended by itself (a thread holding it open would hit the timeout).
    expect(stdout.trim()).toBe('2 86');
  });
});
