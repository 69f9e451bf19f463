/**
 * The event loop's CPU per password sign-in (the POST of the sign-in form), two builds side by side
 * in one process (issue 17): `node dist/bench/login-path-ab.js <rootA> <rootB> [rounds] [batch]`,
 * the sign-in counterpart of refresh-path-ab.ts (token-path-ab.ts's header says why these exist
 * beside the load bench). Each build's app listens on a free loopback port only to be prepared the
 * way the load bench prepares the product (a first-party relying party, 16 users through the
 * Management API, each user's sign-in form opened in a browser session of its own); then its
 * request handler is called directly with those forms, round-robin, 16 in flight, as the load
 * bench's password-login window posts them, and only the main thread's CPU time is read: the
 * Argon2id verification runs on the worker threads and is not counted.
 *
 * `CPU_PROF_ROOT=<root> node dist/bench/login-path-ab.js` profiles that build's sign-ins alone
 * (V8's profiler started after preparation and warm-up, 100 µs sampling) and prints the profile's path.
 */
import { BrowserSession, openLoginForm, type LoginForm } from './flows.js';
import { createProductUser, fetchToken } from './http.js';
import { createRelyingParty } from './targets.js';
import { abMain, BOOTSTRAP, inFlight, mainThreadMicros, startInProcess, type Handle } from './in-process.js';

/** As the load bench's password-login window (bench/options.ts: 16 connections). */
const FORMS = 16;

interface Build {
  handle: Handle;
  forms: LoginForm[];
}

async function buildOf(root: string): Promise<Build> {
  const { handle, baseUrl } = await startInProcess(root, { listen: true, env: { SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000000000' } });
  const admin = await fetchToken(baseUrl, BOOTSTRAP, 'svc:clients:write svc:users:write', 'urn:svc:api:v1');
  const rp = await createRelyingParty(baseUrl, admin);
  const forms: LoginForm[] = [];
  for (let i = 0; i < FORMS; i++) {
    const user = await createProductUser(baseUrl, admin, { email: `bench-user-${i}@bench.invalid`, password: `Bench-password-${i}-${BOOTSTRAP.client_secret}` });
    forms.push(await openLoginForm(new BrowserSession(baseUrl), rp, { login: user.email, password: user.password }, { scope: 'openid' }));
  }
  return { handle, forms };
}

let seq = 0;
/** The form's POST as HttpServer hands it to the app's handler. */
function loginRequest(form: LoginForm): Record<string, unknown> {
  const url = new URL(form.url);
  return {
    id: `login-ab-${seq++}`,
    method: 'POST',
    path: url.pathname,
    rawQuery: url.search.slice(1),
    headers: { host: url.host, cookie: form.cookie, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(form.body.length), accept: 'text/html' },
    ip: '127.0.0.1',
    body: Buffer.from(form.body),
    params: {},
  };
}

/** Main-thread µs per sign-in over `count` sign-ins, every form in flight; throws on anything but the 303 to /auth. */
async function batch(build: Build, count: number): Promise<number> {
  const t0 = mainThreadMicros();
  await inFlight(count, build.forms.length, async (slot) => {
    const res = await build.handle(loginRequest(build.forms[slot]!));
    const location = res.headers?.location ?? '';
    if (res.status !== 303 || !location.includes('/auth/')) throw new Error(`sign-in answered ${res.status} (${location}): ${String(res.body).slice(0, 200)}`);
  });
  return (mainThreadMicros() - t0) / count;
}

abMain({ script: 'login-path-ab', unit: ['sign-in', 'sign-ins'], rounds: 10, size: 200, warmup: 300, buildOf, batch });
