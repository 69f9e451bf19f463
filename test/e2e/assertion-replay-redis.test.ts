/**
 * Client assertion jti replay across instances (PostgreSQL + Redis only: the file name has
 * `redis`). Two apps (two pools of tenant actors, two replay memos) on one database and one Redis
 * key prefix, one issuer (BASE_URL of the first, as behind a balancer):
 * - an assertion openid-client used at instance 1 is refused at instance 2 with invalid_client
 *   (and the other way round), as the single-instance test in client-auth-methods.test.ts expects;
 * - one assertion sent to both instances at the same moment passes exactly once (the claim is one
 *   atomic SET NX in Redis, `<prefix>:<tenant>:jti:<client>:<jti>`, kept until exp + 15 s);
 * - with Redis down, an assertion is answered 503 temporarily_unavailable, never accepted.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { RESOURCE, postForm, serviceClient, type Credentials } from '../helpers/oauth.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';
import { privateRedis, type PrivateRedis } from '../helpers/redis.js';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const SCOPE = 'svc:clients:read';

async function assertion(t: TestApp, c: Credentials, jti = randomUUID(), exp = Math.floor(Date.now() / 1000) + 60): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: c.id, sub: c.id, aud: t.issuer, iat: now, exp, jti }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(c.secret));
}

/** client_credentials for the Management API with a client assertion (the actor's fast path). */
const tokenWithAssertion = (t: TestApp, token: string) =>
  postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE, client_assertion_type: ASSERTION_TYPE, client_assertion: token });

/** openid-client for one instance; the client assertions it sends are collected in `sent`. */
function rp(t: TestApp, c: Credentials, sent: string[]): client.Configuration {
  const config = new client.Configuration({ issuer: t.issuer, token_endpoint: `${t.url}/oidc/v1/token` }, c.id, undefined, client.ClientSecretJwt(c.secret));
  client.allowInsecureRequests(config);
  config[client.customFetch] = (url, options) => {
    const a = new URLSearchParams(String(options.body)).get('client_assertion');
    if (a) sent.push(a);
    return fetch(url, options as RequestInit);
  };
  return config;
}

describe('two instances on one PostgreSQL and one Redis', () => {
  let db: TestDatabase;
  let prefix: string;
  let one: TestApp;
  let two: TestApp;
  let c: Credentials;
  let peek: Redis;

  beforeAll(async () => {
    db = await migratedDatabase();
    prefix = `svctest-jti-${process.pid}-${randomBytes(4).toString('hex')}`;
    const shared = { STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: db.url, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix };
    one = await startTestApp(shared);
    // One public address for both, as behind a load balancer: the assertion audience is one issuer.
    two = await startTestApp({ ...shared, BASE_URL: new URL(one.issuer).origin });
    expect(two.issuer).toBe(one.issuer);
    c = await serviceClient(one, await one.token('svc:clients:read svc:clients:write'), SCOPE, { token_endpoint_auth_method: 'client_secret_jwt' });
    peek = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  }, 90_000);

  afterAll(async () => {
    peek?.disconnect();
    await two?.close();
    await one?.close();
    await db?.drop();
    if (prefix) await dropRedisKeys(TEST_REDIS_URL, prefix);
  });

  it('an assertion openid-client used at instance 1 is invalid_client at instance 2, and the other way round', async () => {
    const sent: string[] = [];
    const tokens = await client.clientCredentialsGrant(rp(one, c, sent), { scope: SCOPE, resource: RESOURCE });
    expect(tokens.access_token).toBeTruthy();
    expect(sent).toHaveLength(1);
    const replay = await tokenWithAssertion(two, sent[0]!);
    expect(replay.status).toBe(401);
    expect(replay.json).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
    // Also on the endpoint oidc-provider serves at instance 2 (an opaque token request, no resource).
    const slow = await postForm(two, '/token', { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: sent[0]! });
    expect(slow.status).toBe(401);
    expect(slow.json.error).toBe('invalid_client');

    await client.clientCredentialsGrant(rp(two, c, sent), { scope: SCOPE, resource: RESOURCE });
    expect(sent).toHaveLength(2);
    expect((await tokenWithAssertion(one, sent[1]!)).json.error).toBe('invalid_client');
  });

  it('claims the jti in Redis under the tenant, until exp + 15 s', async () => {
    const jti = randomUUID();
    const exp = Math.floor(Date.now() / 1000) + 30;
    expect((await tokenWithAssertion(one, await assertion(one, c, jti, exp))).status).toBe(200);
    const key = `${prefix}:default:jti:${c.id}:${jti}`;
    expect(await peek.get(key)).toBe('1');
    const pttl = await peek.pttl(key);
    expect(pttl).toBeGreaterThan(30_000);
    expect(pttl).toBeLessThanOrEqual(45_000);
  });

  it('one assertion sent to both instances at the same moment passes once', async () => {
    // Five rounds: their 15 refusals stay under the failed-authentication throttle (20 a minute per
    // client and address, counted across instances), which would answer 429 past it.
    for (let round = 0; round < 5; round++) {
      const token = await assertion(one, c);
      const answers = await Promise.all([one, two, one, two].map((t) => tokenWithAssertion(t, token)));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401]);
      for (const a of answers.filter((x) => x.status === 401)) expect(a.json.error).toBe('invalid_client');
    }
  });
});

describe('with Redis down', () => {
  let server: PrivateRedis;
  let t: TestApp;
  let c: Credentials;

  beforeAll(async () => {
    server = await privateRedis();
    t = await startTestApp({ REDIS_URL: server.url });
    c = await serviceClient(t, await t.token('svc:clients:read svc:clients:write'), SCOPE, { token_endpoint_auth_method: 'client_secret_jwt' });
    // The client is cached by the actor now (the assertion check below needs no storage but Redis).
    expect((await tokenWithAssertion(t, await assertion(t, c))).status).toBe(200);
    await server.stop();
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await server?.stop();
  });

  it('a client assertion is answered 503 temporarily_unavailable, and accepted once Redis is back', async () => {
    const token = await assertion(t, c);
    const res = await tokenWithAssertion(t, token);
    expect(res.status).toBe(503);
    expect(res.json.error).toBe('temporarily_unavailable');
    await server.start();
    // Not recorded while Redis was away: the same assertion may be tried again.
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await tokenWithAssertion(t, token)).status;
      if (status !== 200) expect(status).toBe(503);
    }
    expect(status).toBe(200);
    expect((await tokenWithAssertion(t, token)).json.error).toBe('invalid_client');
  });
});
