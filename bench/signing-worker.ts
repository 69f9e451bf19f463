/**
 * Piscina task file of bench/signing.ts: signs a JWS signing input with the key given once in
 * workerData (so tasks carry only the bytes to sign), synchronously, on the worker's own thread.
 */
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { workerData } from 'node:worker_threads';

interface SigningWorkerData {
  /** PKCS#8 PEM of each algorithm's key. */
  keys: Record<string, string>;
}

const keys = new Map<string, KeyObject>();
for (const [alg, pem] of Object.entries((workerData as SigningWorkerData).keys)) keys.set(alg, createPrivateKey(pem));

export interface SignTask {
  alg: 'RS256' | 'ES256' | 'EdDSA';
  input: Uint8Array;
}

export default function signTask(task: SignTask): Uint8Array {
  const key = keys.get(task.alg);
  if (!key) throw new Error(`no ${task.alg} key`);
  return sign(task.alg === 'EdDSA' ? null : 'sha256', task.input, { key, dsaEncoding: 'ieee-p1363' });
}
