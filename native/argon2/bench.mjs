#!/usr/bin/env node
/**
 * Throughput of native/argon2 (one reused memory area per thread) against @node-rs/argon2
 * (hashRawSync, which maps and wipes a fresh area per call) at the production parameters
 * m=19456 KiB, t=2, p=1, 32-byte tag, in 1 and 2 worker threads:
 *
 *   node native/argon2/bench.mjs          (HASHES=<n> per thread, default 60; ROUNDS=<n>, default 2)
 *   IMPLS=avx512,avx2,noders node native/argon2/bench.mjs
 *
 * IMPLS lists what to compare: "avx512", "avx2", "scalar" (native/argon2 with that compression
 * function forced), "native" (its default, the best of this CPU) and "noders" (@node-rs/argon2).
 * The default is every SIMD path this CPU has, then noders.
 *
 * Each measurement starts fresh workers, lets each compute one untimed hash (module load,
 * first allocation), waits until all are ready, then times HASHES hashes per thread. The
 * implementations run back to back, in an order that rotates from round to round, because a
 * shared VM's speed drifts.
 */
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const ADDON = join(here, 'build', 'Release', 'argon2_reuse.node');
const PACKAGE_JSON = join(here, '..', '..', 'package.json');
const HASHES = Number(process.env.HASHES ?? 60);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const THREADS = (process.env.THREADS ?? '1,2').split(',').map(Number);
const PARAMS = { t: 2, m: 19456, p: 1, outLen: 32 };

const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
const { impl, addon, packageJson, hashes, params } = workerData;
const req = createRequire(packageJson);
const salt = Buffer.from('0123456789abcdef');
let hash;
if (impl !== 'noders') {
  const native = req(addon);
  const mode = impl === 'native' ? undefined : impl;
  hash = (pwd) => native.hashRaw(pwd, salt, params.t, params.m, params.p, params.outLen, mode);
} else {
  const { hashRawSync } = req('@node-rs/argon2');
  const opts = { algorithm: 2, version: 1, timeCost: params.t, memoryCost: params.m, parallelism: params.p, outputLen: params.outLen, salt };
  hash = (pwd) => hashRawSync(pwd, opts);
}
hash(Buffer.from('warm-up'));
parentPort.postMessage('ready');
parentPort.once('message', () => {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < hashes; i++) sink ^= hash(Buffer.from('password #' + i))[0];
  const ns = Number(process.hrtime.bigint() - start);
  parentPort.postMessage({ ns, sink });
});
`;

async function measure(impl, threads) {
  const workers = Array.from(
    { length: threads },
    () => new Worker(workerCode, { eval: true, workerData: { impl, addon: ADDON, packageJson: PACKAGE_JSON, hashes: HASHES, params: PARAMS } }),
  );
  const next = (w) =>
    new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
  await Promise.all(workers.map(next));
  const done = workers.map(next);
  const start = process.hrtime.bigint();
  for (const w of workers) w.postMessage('go');
  const results = await Promise.all(done);
  const wallNs = Number(process.hrtime.bigint() - start);
  await Promise.all(workers.map((w) => w.terminate()));
  const msPerHash = results.reduce((s, r) => s + r.ns, 0) / results.length / HASHES / 1e6;
  const perSecond = (threads * HASHES) / (wallNs / 1e9);
  return { msPerHash, perSecond };
}

let native;
try {
  native = createRequire(PACKAGE_JSON)(ADDON);
} catch (e) {
  console.error(`native/argon2 is not built (${e.message}): run npm run build:native`);
  process.exit(1);
}
const available = ['avx512', 'avx2'].filter((mode) => {
  try {
    native.hashRaw(Buffer.alloc(0), Buffer.alloc(8), 1, 8, 1, 4, mode);
    return true;
  } catch {
    return false;
  }
});
const impls = process.env.IMPLS ? process.env.IMPLS.split(',') : [...available, 'noders'];
for (const impl of impls) {
  if (!['native', 'avx512', 'avx2', 'scalar', 'noders'].includes(impl)) throw new Error(`IMPLS: unknown ${impl}`);
  if ((impl === 'avx512' || impl === 'avx2') && !available.includes(impl)) throw new Error(`IMPLS: this CPU has no ${impl} path`);
}
const label = (impl) =>
  (impl === 'noders' ? '@node-rs/argon2' : impl === 'native' ? `native (${native.simd})` : `native ${impl}`).padEnd(18);

console.log(
  `Argon2id m=${PARAMS.m} KiB t=${PARAMS.t} p=${PARAMS.p} tag=${PARAMS.outLen} B, ${HASHES} hashes per thread, ` +
    `native simd=${native.simd} (available: ${[...available, 'scalar'].join(', ')}), ${availableParallelism()} CPUs, node ${process.version}`,
);
const rows = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const threads of THREADS) {
    // Rotate the order, so that each implementation runs first, in the middle and last.
    const shift = (round - 1) % impls.length;
    const order = [...impls.slice(shift), ...impls.slice(0, shift)];
    const row = { round, threads };
    for (const impl of order) {
      const r = await measure(impl, threads);
      row[impl] = r;
      console.log(
        `round ${round}  ${threads} thread${threads > 1 ? 's' : ' '}  ${label(impl)}  ` +
          `${r.msPerHash.toFixed(2).padStart(6)} ms/hash  ${r.perSecond.toFixed(1).padStart(6)} hashes/s`,
      );
    }
    rows.push(row);
  }
}

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
console.log(`\nmedian over ${ROUNDS} round${ROUNDS > 1 ? 's' : ''} (hashes/s):`);
for (const threads of THREADS) {
  const mine = rows.filter((r) => r.threads === threads);
  const per = Object.fromEntries(impls.map((impl) => [impl, median(mine.map((r) => r[impl].perSecond))]));
  const parts = impls.map((impl) => `${impl} ${per[impl].toFixed(1)}`);
  const ratios = [];
  for (let i = 0; i < impls.length; i++)
    for (let j = i + 1; j < impls.length; j++) ratios.push(`${impls[i]}/${impls[j]} x${(per[impls[i]] / per[impls[j]]).toFixed(2)}`);
  console.log(`${threads} thread${threads > 1 ? 's' : ' '}  ${parts.join('  ')}   ${ratios.join('  ')}`);
}
