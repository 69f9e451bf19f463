/**
 * Worker thread of src/keys/batch-signer.ts: signs a batch of JWS signing inputs and answers with
 * one message. Each input is signed synchronously here, which blocks this thread only; the event
 * loop pays one message out and one back per batch instead of a threadpool hand-off per token.
 */
import { sign, type KeyObject } from 'node:crypto';
import { parentPort } from 'node:worker_threads';

/** A batch: the distinct keys it uses, then each input with the index of its key and its hash. */
export interface SignBatch {
  id: number;
  keys: KeyObject[];
  /** [key index, digest (null for EdDSA), signing input as latin1 text]. */
  items: Array<[key: number, hash: string | null, input: string]>;
}

/** The signatures in the batch's order, base64url, or the error of an input that could not be signed. */
export interface SignResult {
  id: number;
  signatures: Array<string | { error: string }>;
}

export function signBatch(batch: SignBatch): SignResult {
  const signatures = batch.items.map(([k, hash, input]): string | { error: string } => {
    try {
      const key = batch.keys[k];
      if (!key) return { error: 'no key for this input' };
      return sign(hash, Buffer.from(input, 'latin1'), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err) };
    }
  });
  return { id: batch.id, signatures };
}

parentPort?.on('message', (batch: SignBatch) => parentPort!.postMessage(signBatch(batch)));
