/**
 * The event loop's CPU per refresh_token request (rotation and an ID token), two builds side by
 * side in one process (issue 17): `node dist/bench/refresh-path-ab.js <rootA> <rootB> [rounds]
 * [batch]`, the refresh counterpart of token-path-ab.ts (its header says why these exist beside
 * the load bench). Each build's app listens on a free loopback port only to be prepared the way
 * the load bench prepares the product (a first-party relying party and a user through the
 * Management API, 50 refresh tokens from code flows on the sign-in pages); then its request
 * handler is called directly, each of the 50 chains presenting the refresh token of its previous
 * answer, and only the main thread's CPU time is read: the ID token's RSA signature runs on
 * libuv's pool and is not counted.
 *
 * `CPU_PROF_ROOT=<root> node dist/bench/refresh-path-ab.js` profiles that build's refreshes alone
 * (V8's profiler started after preparation and warm-up, 100 µs sampling) and prints the profile's
 * path; `--cpu-prof` on the command line would take the preparation in too.
 */
import { refreshTokens } from './flows.js';
import { basicAuth, createProductUser, fetchToken } from './http.js';
import { createRelyingParty } from './targets.js';
import { abMain, BOOTSTRAP, inFlight, mainThreadMicros, startInProcess, tokenRequest, type Handle } from './in-process.js';

interface Build {
  handle: Handle;
  authorization: string;
  /** The latest refresh token of each chain. */
  chains: string[];
}

const CHAINS = 50;

/** One build, prepared as the load bench prepares the product (bench/targets.ts). */
async function buildOf(root: string): Promise<Build> {
  const { handle, baseUrl } = await startInProcess(root, { listen: true, env: { SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000000000' } });
  const admin = await fetchToken(baseUrl, BOOTSTRAP, 'svc:clients:write svc:users:write', 'urn:svc:api:v1');
  const rp = await createRelyingParty(baseUrl, admin);
  const user = await createProductUser(baseUrl, admin, { email: 'bench-user@bench.invalid', password: `Bench-password-${BOOTSTRAP.client_secret}` });
  const chains = await refreshTokens(baseUrl, rp, { login: user.email, password: user.password }, CHAINS);
  return { handle, authorization: basicAuth(rp), chains };
}

/** Main-thread µs per refresh over `count` refreshes, every chain in flight; throws on a non-200. */
async function batch(build: Build, count: number): Promise<number> {
  const t0 = mainThreadMicros();
  await inFlight(count, build.chains.length, async (chain) => {
    const res = await build.handle(tokenRequest(build.authorization, `grant_type=refresh_token&refresh_token=${encodeURIComponent(build.chains[chain]!)}`));
    if (res.status !== 200) throw new Error(`refresh answered ${res.status}: ${String(res.body)}`);
    build.chains[chain] = (JSON.parse(String(res.body)) as { refresh_token: string }).refresh_token;
  });
  return (mainThreadMicros() - t0) / count;
}

abMain({ script: 'refresh-path-ab', unit: ['refresh', 'refreshes'], rounds: 20, size: 500, warmup: 2000, buildOf, batch });
