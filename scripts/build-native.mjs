#!/usr/bin/env node
/**
 * Builds the project's native addons with node-gyp: native/argon2 (Argon2id with a reused memory
 * area) and native/reexec (execve, for settings read at program load: src/keys/openssl-reexec.ts).
 * Runs from `npm ci` (the "install" script) and before every `npm run build` with --if-missing
 * (each addon only when its output is missing). A machine without a C compiler still installs and
 * runs: the service then verifies passwords with @node-rs/argon2 alone (same hashes, about twice
 * the CPU each) and leaves OPENSSL_ia32cap to the operator, and this says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const addons = [
  { name: 'argon2', output: 'argon2_reuse.node', without: 'passwords will be hashed with @node-rs/argon2 alone' },
  { name: 'reexec', output: 'reexec.node', without: 'the service cannot set OPENSSL_ia32cap itself on AMD Zen 3 (README, Tuning)' },
];

/** npm hands its own node-gyp to scripts; run directly, look for the copy bundled with npm. */
function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  return candidates.find((file) => file && existsSync(file));
}

const gyp = nodeGyp();
for (const addon of addons) {
  const dir = join(root, 'native', addon.name);
  const output = join(dir, 'build', 'Release', addon.output);
  if (process.argv.includes('--if-missing') && existsSync(output)) continue;
  const result = gyp
    ? spawnSync(process.execPath, [gyp, 'rebuild', '--silent'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] })
    : { status: null, error: new Error('node-gyp not found') };
  if (result.status !== 0 || !existsSync(output)) {
    const why = result.error ? result.error.message : `node-gyp exited with ${result.status}`;
    console.warn(`native/${addon.name} was not built (${why}): ${addon.without}.`);
  }
}
