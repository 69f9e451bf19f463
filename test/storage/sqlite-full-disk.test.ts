/**
 * A full disk under the SQLite database (src/storage/sqlite/failures.ts). Every surface answers a
 * write it cannot store with 503 and Retry-After (problem+json, OAuth `temporarily_unavailable`),
 * never a 500; nothing is half-written (a refresh that failed leaves its token usable, not
 * "replayed"); reads go on; the operator is told once; and the same requests work again once space
 * is back, without a restart. SQLite's own `PRAGMA max_page_count` makes the database full for real
 * (SQLITE_FULL, "database or disk is full", what a full file system gives), and lifting it is the
 * operator freeing space.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Unavailable } from '../../src/errors.js';
import type { SqliteStorage } from '../../src/storage/sqlite/index.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, expectTemporarilyUnavailable, tokenEndpointConfig, type CodeFlowClient } from '../helpers/code-flow.js';
import { captureLog, type CapturedLog } from '../helpers/log.js';
import { createUser } from '../helpers/users.js';

const REDIRECT = 'http://127.0.0.1:65531/cb';

let t: TestApp;
let captured: CapturedLog;
let admin: string;
let session: HttpSession;
let web: CodeFlowClient;
let refreshToken: string;

beforeAll(async () => {
  captured = captureLog('warn');
  t = await startTestApp({}, { log: captured.log });
  admin = await t.token('svc:clients:read svc:clients:write svc:users:write');
  const user = await createUser(t);
  session = new HttpSession(t.issuer, user);
  web = await codeFlowClient(t, admin, REDIRECT);
  refreshToken = (await session.tokens(web, { scope: 'openid offline_access' })).refresh_token!;
});
afterAll(async () => t?.close());

const db = () => (t.app.ctx.storage as SqliteStorage).db;

const rpConfig = () => tokenEndpointConfig(t.issuer, web);

const listed = async () => (await api(t, 'GET', '/api/v1/clients?limit=100', { token: admin })).json.data.length as number;

describe('the SQLite database on a full disk', () => {
  it('fills up: the statement that finds no room fails as Unavailable, its cause SQLITE_FULL', () => {
    db().exec('CREATE TABLE disk_filler (b BLOB)');
    db().pragma(`max_page_count = ${db().pragma('page_count', { simple: true }) as number}`);
    let failure: unknown;
    for (let i = 0; i < 100_000 && failure === undefined; i++) {
      try {
        db().prepare('INSERT INTO disk_filler VALUES (randomblob(4000))').run();
      } catch (err) {
        failure = err;
      }
    }
    expect(failure).toBeInstanceOf(Unavailable);
    expect((failure as Error).cause).toMatchObject({ code: 'SQLITE_FULL' });
  });

  it('writes answer 503 with Retry-After on every surface, never 500; nothing half-written; reads go on; the operator is told once', async () => {
    // Writes that land in pages with room left still succeed (as on a real full disk, where the
    // WAL's allocated space is reused): each kind of write goes on until it needs a page.
    const before = await listed();
    const statuses: number[] = [];
    while (statuses.length < 100 && !statuses.includes(503)) {
      const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: `while full ${statuses.length}`, grant_types: ['client_credentials'] } });
      statuses.push(res.status);
    }
    expect(statuses.filter((s) => s !== 201 && s !== 503)).toEqual([]);
    expect(statuses).toContain(503);
    for (let i = 0; i < 3; i++) {
      const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'while full', grant_types: ['client_credentials'] } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.json).toMatchObject({ type: 'urn:svc:error:unavailable', status: 503 });
      expect(res.text).not.toMatch(/SQLITE|at \w+ \(|database or disk/);
    }
    expect(await listed()).toBe(before + statuses.filter((s) => s === 201).length);

    let refused: unknown;
    for (let i = 0; i < 200 && refused === undefined; i++) {
      try {
        refreshToken = (await oidc.refreshTokenGrant(rpConfig(), refreshToken)).refresh_token!;
      } catch (err) {
        refused = err;
      }
    }
    await expectTemporarilyUnavailable(refused);
    await expectTemporarilyUnavailable(await oidc.refreshTokenGrant(rpConfig(), refreshToken).then(() => undefined, (err: unknown) => err));

    // A sign-in that cannot store its interaction: the client hears temporarily_unavailable (RFC
    // 6749 4.1.2.1) with its state. The interaction rows land at random keys, so some still fit.
    const config = new oidc.Configuration({ issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth` }, web.client_id);
    oidc.allowInsecureRequests(config);
    const answers: string[] = [];
    while (answers.length < 100 && !answers.some((a) => a.startsWith(REDIRECT))) {
      const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', state: `s${answers.length}`, code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
      const res = await fetch(url, { redirect: 'manual' });
      await res.arrayBuffer();
      expect(res.status).toBeLessThan(400);
      answers.push(res.headers.get('location') ?? '');
    }
    const refusal = new URL(answers.find((a) => a.startsWith(REDIRECT))!);
    expect(Object.fromEntries(refusal.searchParams)).toMatchObject({ error: 'temporarily_unavailable', state: `s${answers.length - 1}` });
    expect(answers.slice(0, -1).every((a) => a.includes('/interaction/'))).toBe(true);

    const reports = captured.lines.filter((l) => /^SQLite cannot serve a statement now/.test(l.msg));
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ level: 50, code: 'SQLITE_FULL' });
    // Refusals for an unavailable storage are not errors of the service: nothing else at error level.
    expect(captured.lines.filter((l) => l.level >= 50 && l !== reports[0]).map((l) => l.msg)).toEqual([]);
  });

  it('once there is room again: the same requests work, without a restart, and the refused refresh token was not spent', async () => {
    db().pragma('max_page_count = 1073741823');
    db().exec('DROP TABLE disk_filler');
    const created = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'after', grant_types: ['client_credentials'] } });
    expect(created.status).toBe(201);
    const refreshed = await oidc.refreshTokenGrant(rpConfig(), refreshToken);
    expect(refreshed.access_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(refreshToken);
    const again = await session.tokens(web, { scope: 'openid' });
    expect(again.access_token).toBeTruthy();
  });
});
