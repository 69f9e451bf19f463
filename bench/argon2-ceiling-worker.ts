/**
 * One thread of argon2-ceiling.ts: verifies one password against one hash for `seconds`, posts the
 * count. `implementation` "product" runs the product's own task functions (workers/argon2.ts: the
 * native addon when built), "node-rs" @node-rs/argon2 alone, for the side-by-side figure.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Algorithm, hashSync, verifySync } from '@node-rs/argon2';
import { hash as productHash, verify as productVerify } from '../workers/argon2.js';

const { seconds, params, implementation } = workerData as {
  seconds: number;
  params: { memory_cost: number; time_cost: number; parallelism: number };
  implementation: 'product' | 'node-rs';
};
const password = 'correct horse battery staple';
const verifyOnce =
  implementation === 'product'
    ? ((hash: string) => () => productVerify({ hash, password }))(productHash({ password, params }))
    : ((hash: string) => () => verifySync(hash, password))(
        hashSync(password, { algorithm: Algorithm.Argon2id, memoryCost: params.memory_cost, timeCost: params.time_cost, parallelism: params.parallelism }),
      );
let n = 0;
for (const end = performance.now() + seconds * 1000; performance.now() < end; n++) {
  if (!verifyOnce()) throw new Error('the ceiling\'s own hash did not verify');
}
parentPort?.postMessage(n);
