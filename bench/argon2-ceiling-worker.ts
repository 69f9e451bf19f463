/** One thread of argon2-ceiling.ts: verifies one password against one hash for `seconds`, posts the count. */
import { parentPort, workerData } from 'node:worker_threads';
import { Algorithm, hashSync, verifySync } from '@node-rs/argon2';

const { seconds, params } = workerData as { seconds: number; params: { memory_cost: number; time_cost: number; parallelism: number } };
const password = 'correct horse battery staple';
const hash = hashSync(password, { algorithm: Algorithm.Argon2id, memoryCost: params.memory_cost, timeCost: params.time_cost, parallelism: params.parallelism });
let n = 0;
for (const end = performance.now() + seconds * 1000; performance.now() < end; n++) verifySync(hash, password);
parentPort?.postMessage(n);
