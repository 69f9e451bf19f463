/**
 * Issue 12 item 10, Redis side: refresh tokens and sessions were stored under
 * `<prefix>:<tenant>:oidc:RefreshToken:<token>`; now under a keyed hash, with no raw value in the
 * stored payload either.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, codeFlow } from '../../bench/flows.js';
import { startTestApp, TEST_REDIS_URL, type TestApp } from '../helpers/app.js';
import { createClient, createUser } from '../helpers/users.js';

const REDIRECT = 'https://rp.example/cb';

describe('bearer values at rest in Redis', () => {
  let t: TestApp;
  let r: Redis;
  beforeAll(async () => {
    t = await startTestApp();
    r = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    r?.disconnect();
    await t?.close();
  });

  it('keys and values hold no refresh token or session id', async () => {
    expect(t.redis).toBe(true);
    const c = await createClient(t, { client_name: 'rp', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: 'openid offline_access', first_party: true });
    const session = new BrowserSession(t.url);
    const user = await createUser(t);
    const tokens = await codeFlow(session, { client_id: c.client_id, client_secret: c.client_secret, redirect_uri: REDIRECT }, { login: user.email, password: user.password }, { scope: 'openid offline_access', params: { prompt: 'consent' } });
    const refreshToken = String(tokens.refresh_token);
    const sessionId = session.jar.header().split('; ').find((x) => x.startsWith('_session='))!.split('=')[1]!;
    const prefix = t.app.ctx.config.redis.key_prefix;
    const keys = await r.keys(`${prefix}:*`);
    expect(keys.some((k) => k.includes(':oidc:RefreshToken:'))).toBe(true);
    expect(keys.some((k) => k.includes(':oidc:Session:'))).toBe(true);
    let dump = keys.join('\n');
    for (const k of keys) {
      const type = await r.type(k);
      if (type === 'string') dump += await r.get(k);
      else if (type === 'hash') dump += JSON.stringify(await r.hgetall(k));
      else if (type === 'set') dump += (await r.smembers(k)).join(',');
      else if (type === 'zset') dump += (await r.zrange(k, 0, -1)).join(',');
    }
    expect(dump).not.toContain(refreshToken);
    expect(dump).not.toContain(sessionId);
  });
});
