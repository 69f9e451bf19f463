#!/usr/bin/env node
/**
 * Throughput of native/argon2 (one reused memory area per thread) against @node-rs/argon2
 * (hashRawSync, which maps and wipes a fresh area per call) at the production parameters
 * m=19456 KiB, t=2, p=1, 32-byte tag, in 1 and 2 worker threads:
 *
 *   node native/argon2/bench.mjs          (HASHES=<n> per thread, default 60; ROUNDS=<n>, default 2)
 *
 * Each measurement starts fresh workers, lets each compute one untimed hash (module load,
 * first allocation), waits until all are ready, then times HASHES hashes per thread. The
 * two implementations run back to back, in alternating order from round to round, because
 * a shared VM's speed drifts.
 */
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const here = dirname(fileURLToPath(import.meta.url));
const ADDON = join(here, 'build', 'Release', 'argon2_reuse.node');
const PACKAGE_JSON = join(here, '..', '..', 'package.json');
const HASHES = Number(process.env.HASHES ?? 60);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const PARAMS = { t: 2, m: 19456, p: 1, outLen: 32 };

const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
const { impl, addon, packageJson, hashes, params } = workerData;
const req = createRequire(packageJson);
const salt = Buffer.from('0123456789abcdef');
let hash;
if (impl === 'native') {
  const native = req(addon);
  hash = (pwd) => native.hashRaw(pwd, salt, params.t, params.m, params.p, params.outLen);
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

const label = { native: 'native/argon2  ', noders: '@node-rs/argon2' };
let simd = '?';
try {
  simd = (await import('node:module')).createRequire(PACKAGE_JSON)(ADDON).simd;
} catch (e) {
  console.error(`native/argon2 is not built (${e.message}): run node-gyp rebuild in native/argon2`);
  process.exit(1);
}
console.log(
  `Argon2id m=${PARAMS.m} KiB t=${PARAMS.t} p=${PARAMS.p} tag=${PARAMS.outLen} B, ${HASHES} hashes per thread, ` +
    `native simd=${simd}, ${availableParallelism()} CPUs, node ${process.version}`,
);
const summary = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const threads of [1, 2]) {
    const order = round % 2 === 1 ? ['native', 'noders'] : ['noders', 'native'];
    const row = {};
    for (const impl of order) {
      const r = await measure(impl, threads);
      row[impl] = r;
      console.log(
        `round ${round}  ${threads} thread${threads > 1 ? 's' : ' '}  ${label[impl]}  ` +
          `${r.msPerHash.toFixed(2).padStart(6)} ms/hash  ${r.perSecond.toFixed(1).padStart(6)} hashes/s`,
      );
    }
    summary.push({ round, threads, ...row });
  }
}
console.log('\nnative vs @node-rs/argon2 (hashes/s ratio):');
for (const s of summary) {
  console.log(`round ${s.round}  ${s.threads} thread${s.threads > 1 ? 's' : ' '}  x${(s.native.perSecond / s.noders.perSecond).toFixed(2)}`);
}
