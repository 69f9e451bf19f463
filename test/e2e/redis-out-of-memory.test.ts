/**
 * A Redis that refuses writes for want of memory (`maxmemory` with `noeviction`: "OOM command not
 * allowed when used memory > 'maxmemory'") or of a disk for its snapshots (MISCONF): the requests
 * that write there answer 503 with Retry-After, never a 500; a refresh refused that way leaves its
 * token unspent; and everything works again, without a restart, once Redis takes writes. A private
 * redis-server, configured as an operator would (CONFIG SET), is the real peer.
 */
import { Redis } from 'ioredis';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, expectTemporarilyUnavailable, tokenEndpointConfig, type CodeFlowClient } from '../helpers/code-flow.js';
import { postForm } from '../helpers/oauth.js';
import { captureLog, type CapturedLog } from '../helpers/log.js';
import { privateRedis, type PrivateRedis } from '../helpers/redis.js';
import { createClient, createUser } from '../helpers/users.js';

const REDIRECT = 'http://127.0.0.1:65531/cb';

let server: PrivateRedis;
let t: TestApp;
let web: CodeFlowClient;
let refreshToken: string;
let deviceClient: { id: string; secret: string };
let admin: Redis;
let captured: CapturedLog;

beforeAll(async () => {
  // Protected configs (dir) may be set at run time here: the MISCONF case points snapshots at /proc.
  server = await privateRedis(['--enable-protected-configs', 'yes']);
  captured = captureLog('warn');
  t = await startTestApp({ REDIS_URL: server.url }, { log: captured.log });
  const token = await t.token('svc:clients:write svc:users:write');
  const user = await createUser(t);
  web = await codeFlowClient(t, token, REDIRECT);
  refreshToken = (await new HttpSession(t.issuer, user).tokens(web, { scope: 'openid offline_access' })).refresh_token!;
  const c = await createClient(t, { client_name: 'TV', grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], scope: 'openid' });
  deviceClient = { id: c.client_id, secret: c.client_secret };
  admin = new Redis(server.url, { maxRetriesPerRequest: 0 });
});
afterAll(async () => {
  admin?.disconnect();
  await t?.close();
  await server?.stop();
});

const rp = () => tokenEndpointConfig(t.issuer, web);

const deviceAuth = () => postForm(t, '/device/auth', { scope: 'openid' }, deviceClient);

describe('Redis refusing writes', () => {
  for (const [what, refuse, allow, reason] of [
    ['out of memory (OOM)', async () => void (await admin.config('SET', 'maxmemory-policy', 'noeviction'), await admin.config('SET', 'maxmemory', '1')), async () => void (await admin.config('SET', 'maxmemory', '0')), /^OOM command not allowed/],
    // MISCONF: snapshots on (a save point) and the last one failed. A snapshot into a directory Redis cannot write fails.
    ['unable to persist (MISCONF)', async () => {
      await admin.config('SET', 'save', '3600 1');
      await admin.config('SET', 'stop-writes-on-bgsave-error', 'yes');
      await admin.config('SET', 'dir', '/proc');
      await admin.bgsave().catch(() => undefined);
      for (let i = 0; i < 100 && !/rdb_last_bgsave_status:err/.test(await admin.info('persistence')); i++) await new Promise((r) => setTimeout(r, 50));
    }, async () => void (await admin.config('SET', 'save', ''), await admin.config('SET', 'stop-writes-on-bgsave-error', 'no'), await admin.config('SET', 'dir', '/tmp')), /^MISCONF /],
  ] as const) {
    it(`${what}: writes answer 503, the refused refresh token stays good, all works again after`, async () => {
      await refuse();
      try {
        await expectTemporarilyUnavailable(await oidc.refreshTokenGrant(rp(), refreshToken).then(() => undefined, (e: unknown) => e));
        const device = await deviceAuth();
        expect(device.status).toBe(503);
        expect(device.json).toMatchObject({ error: 'temporarily_unavailable' });
        // What reads only still works: discovery, JWKS.
        expect((await fetch(`${t.issuer}/jwks`)).status).toBe(200);
        // The operator's log says why (Redis's own reply).
        expect(captured.lines.some((l) => l.msg === 'OIDC request refused: storage unavailable' && reason.test(String(l.reason)))).toBe(true);
      } finally {
        await allow();
      }
      const refreshed = await oidc.refreshTokenGrant(rp(), refreshToken);
      refreshToken = refreshed.refresh_token!;
      expect(refreshed.access_token).toBeTruthy();
      expect((await deviceAuth()).status).toBe(200);
    });
  }
});
