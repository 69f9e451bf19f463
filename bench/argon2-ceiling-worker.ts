/**
 * One thread of argon2-ceiling.ts: verifies one password against one hash for `seconds`, posts the
 * count. `implementation` "product" runs the product's own task functions (workers/argon2.ts: the
 * native addon when built), "node-rs" @node-rs/argon2 alone, for the side-by-side figure.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Algorithm, hashSync, verifySync } from '@node-rs/argon2';
import { type Argon2Params, hash as productHash, verify as productVerify } from '../workers/argon2.js';

const { seconds, params, implementation } = workerData as {
  seconds: number;
  params: Argon2Params;
  implementation: 'product' | 'node-rs';
};
const password = 'correct horse battery staple';

/** One verification of `password` against a hash written by the same implementation. */
function verifier(): () => boolean {
  if (implementation === 'product') {
    const hash = productHash({ password, params });
    return () => productVerify({ hash, password });
  }
  const hash = hashSync(password, { algorithm: Algorithm.Argon2id, memoryCost: params.memory_cost, timeCost: params.time_cost, parallelism: params.parallelism });
  return () => verifySync(hash, password);
}

const verifyOnce = verifier();
let n = 0;
for (const end = performance.now() + seconds * 1000; performance.now() < end; n++) {
  if (!verifyOnce()) throw new Error('the ceiling\'s own hash did not verify');
}
parentPort?.postMessage(n);
