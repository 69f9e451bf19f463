#!/usr/bin/env node
/**
 * Builds the project's native addon (native/argon2, Argon2id with a reused memory area) with
 * node-gyp. Runs from `npm ci` (the "install" script) and before every `npm run build` with
 * --if-missing. A machine without a C compiler still installs and runs: the service then verifies
 * passwords with @node-rs/argon2 alone (same hashes, about twice the CPU each), and this says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'native', 'argon2');
const output = join(dir, 'build', 'Release', 'argon2_reuse.node');

if (process.argv.includes('--if-missing') && existsSync(output)) process.exit(0);

/** npm hands its own node-gyp to scripts; run directly, look for the copy bundled with npm. */
function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  return candidates.find((file) => file && existsSync(file));
}

const gyp = nodeGyp();
const result = gyp
  ? spawnSync(process.execPath, [gyp, 'rebuild', '--silent'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] })
  : { status: null, error: new Error('node-gyp not found') };
if (result.status !== 0 || !existsSync(output)) {
  const why = result.error ? result.error.message : `node-gyp exited with ${result.status}`;
  console.warn(`native/argon2 was not built (${why}): passwords will be hashed with @node-rs/argon2 alone.`);
}
