/**
 * The event loop's CPU per client_credentials request, two builds side by side in one process
 * (issue 17): `node dist/bench/token-path-ab.js <rootA> <rootB> [rounds] [batch]`, each root a
 * checkout with its `dist/` built (a copy of dist/ with node_modules linked next to it will do).
 *
 * Why not the load bench: on the shared 2-core machine the req/s and even the CPU µs/req of a
 * 10-second window swing by ±30% with other processes, more than the change being judged. Here
 * each build's app is started without listening and its request handler is called directly (the
 * token path from tenant resolution to the signed answer, without uWS and the network), 50
 * requests in flight, and only the main thread's CPU time is read (/proc/self/task/<pid>/schedstat,
 * nanoseconds): the RSA signature itself runs on libuv's pool and is not counted. Batches of A
 * and B alternate, so a busy moment of the machine hits both; the per-round ratio B/A is the
 * figure to read (swap the roots to check the order does not matter). in-process.ts has the parts
 * shared with refresh-path-ab.ts.
 */
import { resolve } from 'node:path';
import { basicAuth } from './http.js';
import { alternate, BOOTSTRAP, inFlight, mainThreadMicros, runMain, startInProcess, tokenRequest, type Handle } from './in-process.js';

const FORM = 'grant_type=client_credentials&resource=urn%3Asvc%3Aapi%3Av1&scope=svc%3Aclients%3Aread';
const IN_FLIGHT = 50;

const authorization = basicAuth(BOOTSTRAP);

/** Main-thread µs per request over `count` requests, IN_FLIGHT at a time; throws on a non-200. */
async function batch(handle: Handle, count: number): Promise<number> {
  const t0 = mainThreadMicros();
  await inFlight(count, IN_FLIGHT, async () => {
    const res = await handle(tokenRequest(authorization, FORM));
    if (res.status !== 200) throw new Error(`token request answered ${res.status}: ${String(res.body)}`);
  });
  return (mainThreadMicros() - t0) / count;
}

runMain(async () => {
  const [rootA, rootB, rounds = '30', size = '500'] = process.argv.slice(2);
  if (!rootA || !rootB) throw new Error('usage: node dist/bench/token-path-ab.js <rootA> <rootB> [rounds] [batch]');
  const a = (await startInProcess(rootA)).handle;
  const b = resolve(rootB) === resolve(rootA) ? a : (await startInProcess(rootB)).handle;
  await alternate([rootA, rootB], a, b, batch, Number(rounds), Number(size));
});
