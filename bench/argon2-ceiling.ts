/**
 * The Argon2id ceiling of this machine at this moment: verifications per second with nothing but
 * Argon2 running, on as many threads as the product's worker pool has by default
 * (os.availableParallelism()), with the contract's parameters. Printed next to the password-login
 * figure: on this VM the ceiling itself moves by ±30% during a day, and a login is ~85-90% Argon2,
 * so logins/s only means something next to the ceiling measured in the same run.
 *
 * Measured twice: with the product's own task functions (workers/argon2.ts, the native addon with
 * its reused memory area when built) and with @node-rs/argon2 alone, the implementation it replaced.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../src/config/index.js';
import type { Argon2Params } from '../workers/argon2.js';
import { nativeArgon2 } from '../workers/argon2-native.js';

export interface Argon2Ceiling {
  /** "native (avx512)", "native (avx2)" or "@node-rs/argon2": what the product's workers use. */
  implementation: string;
  threads: number;
  seconds: number;
  verifiesPerSecond: number;
  /** CPU (user + system, all threads of this process) per verification. */
  cpuMsEach: number;
  /** The same measured with @node-rs/argon2 alone, right after. */
  nodeRs: { verifiesPerSecond: number; cpuMsEach: number };
}

export async function argon2Ceiling(seconds = 3, threads = availableParallelism()): Promise<Argon2Ceiling> {
  const native = nativeArgon2();
  const params = loadConfig({}).security.password.argon2;
  const product = await measure('product', params, seconds, threads);
  const nodeRs = await measure('node-rs', params, seconds, threads);
  return {
    implementation: native ? `native (${native.simd})` : '@node-rs/argon2',
    threads,
    ...product,
    nodeRs: { verifiesPerSecond: nodeRs.verifiesPerSecond, cpuMsEach: nodeRs.cpuMsEach },
  };
}

async function measure(
  implementation: 'product' | 'node-rs',
  params: Argon2Params,
  seconds: number,
  threads: number,
): Promise<{ seconds: number; verifiesPerSecond: number; cpuMsEach: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const counts = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<number>((resolve, reject) => {
          const worker = new Worker(new URL('./argon2-ceiling-worker.js', import.meta.url), { workerData: { seconds, params, implementation } });
          worker.once('message', (n: number) => resolve(n));
          worker.once('error', reject);
        }),
    ),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const total = counts.reduce((a, b) => a + b, 0);
  return {
    seconds: Math.round(elapsed * 100) / 100,
    verifiesPerSecond: Math.round((total / elapsed) * 10) / 10,
    cpuMsEach: total ? Math.round(((cpu.user + cpu.system) / total / 1000) * 100) / 100 : 0,
  };
}
