/**
 * `npm run bench:saturated`: CPU per request of discovery and JWKS with the server saturated,
 * product and stock oidc-provider side by side, alternating (bench/README.md, "When the load
 * generator is the limit").
 *
 * autocannon runs in one thread of `npm run bench`'s own process; on these two rows the product
 * answers faster than it asks, goes idle between requests and pays a wake-up for each, which the
 * bench counts in its CPU µs/req. wrk (C, two threads) keeps the product busy, so this reads the cost
 * of a request itself. Stock oidc-provider is saturated under either tool.
 *
 *   npm run bench:saturated [-- <seconds per window, default 8> <rounds, default 2>]
 *
 * Needs wrk (Debian: apt-get install wrk). Both servers are started as `npm run bench` starts them
 * (targets.ts: the product in production mode with default logging, on SQLite in a temp dir).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { openBackend } from './backend.js';
import { OIDC_PATH } from './constants.js';
import { processCpuMicros } from './cpu.js';
import { killAllChildren, removeDir, startServer, type ServerProcess } from './processes.js';
import { baselineTarget, productTarget } from './targets.js';

const PATHS = { discovery: `${OIDC_PATH}/.well-known/openid-configuration`, jwks: `${OIDC_PATH}/jwks` } as const;

/** One window: req/s and the server's CPU µs per request (user + system, all its threads). */
async function window(server: ServerProcess, path: string, seconds: number): Promise<string> {
  const cpu0 = processCpuMicros(server.pid);
  const { stdout } = await promisify(execFile)('wrk', ['-t2', '-c50', `-d${seconds}s`, server.baseUrl + path]);
  const cpu = processCpuMicros(server.pid) - cpu0;
  const requests = Number(/^\s*(\d+) requests in/m.exec(stdout)?.[1]);
  if (!(requests > 0)) throw new Error(`wrk reported no requests:\n${stdout}`);
  return `${Math.round(requests / seconds).toString().padStart(8)} req/s  ${(cpu / requests).toFixed(1).padStart(6)} µs/req`;
}

async function main(): Promise<void> {
  const [seconds = 8, rounds = 2] = process.argv.slice(2).map(Number);
  if (!(seconds > 0) || !(rounds >= 1)) throw new Error('usage: node dist/bench/saturated.js [seconds > 0] [rounds >= 1]');
  await promisify(execFile)('wrk', ['--version']).catch((err: NodeJS.ErrnoException) => {
    // wrk prints its version and exits 1; only a missing binary is an error.
    if (err.code === 'ENOENT') throw new Error('wrk is not installed (apt-get install wrk)');
  });
  const backend = await openBackend('sqlite');
  const servers: ServerProcess[] = [];
  try {
    servers.push(await startServer(productTarget(process.env, backend).spec), await startServer(baselineTarget().spec));
    process.stdout.write(`${'path'.padEnd(10)} ${'server'.padEnd(9)} saturated (wrk -t2 -c50, ${seconds} s)\n`);
    for (let round = 0; round < rounds; round++) {
      for (const [name, path] of Object.entries(PATHS)) {
        for (const server of servers) process.stdout.write(`${name.padEnd(10)} ${server.name.padEnd(9)} ${await window(server, path, seconds)}\n`);
      }
    }
  } finally {
    for (const server of servers) {
      await server.stop();
      await removeDir(server.dir);
    }
    await backend.close();
  }
}

main().catch((err: unknown) => {
  killAllChildren();
  process.stderr.write(`bench:saturated: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
