/**
 * Back-channel logout (spec 1.4) for every way a session ends, not only the end-session endpoint:
 * an administrator revoking the session, locking the user, and the user ending it on the account
 * page. Each sends the client a logout_token verifiable against the served JWKS, carrying the
 * session's sid and the subject the client knows: for a pairwise client, the pairwise `sub` of its
 * ID tokens (the end-session path sent the account id before), never the account id.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import { HttpSession, type CodeFlowClient } from '../helpers/code-flow.js';
import { createUser } from '../helpers/users.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';
import { until } from '../helpers/until.js';

const REDIRECT = 'http://127.0.0.1:65529/cb';

let f: UserFlowFixture;
let t: TestApp;
let receiver: Server;
let receiverUrl: string;
const received: string[] = [];

beforeAll(async () => {
  f = await startUserFlowFixture(REDIRECT, 'svc:clients:write svc:users:write svc:sessions:read svc:sessions:revoke');
  t = f.t;
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(new URLSearchParams(body).get('logout_token') ?? '');
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/bcl`;
});
afterAll(async () => {
  await f?.t.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

/** A fresh user signed in through a client with a back-channel logout URI: the session's sid and the ID token's sub. */
async function signedIn(extra: Record<string, unknown> = {}) {
  const user = await createUser(t, { email_verified: true });
  const session = new HttpSession(t.issuer, user);
  const client = await f.newClient({ backchannel_logout_uri: receiverUrl, ...extra });
  const tokens = await session.tokens(client, { scope: 'openid' });
  const claims = tokens.claims()!;
  return { user, session, client, idToken: tokens.id_token!, sub: claims.sub, sid: claims.sid as string };
}

/** The next logout token for `client`, verified (signature, iss, aud, typ). */
async function logoutTokenFor(client: CodeFlowClient): Promise<JWTPayload> {
  const jwks = createRemoteJWKSet(new URL(`${t.issuer}/jwks`));
  let found: JWTPayload | undefined;
  await until(async () => {
    for (const token of received) {
      if (decodeJwt(token).aud !== client.client_id) continue;
      found = (await jwtVerify(token, jwks, { issuer: t.issuer, audience: client.client_id, typ: 'logout+jwt' })).payload;
    }
    return found !== undefined;
  }, 10_000);
  return found!;
}

async function sessionOf(userId: string): Promise<string> {
  const list = await api(t, 'GET', `/api/v1/sessions?username=${userId}`, { token: f.admin });
  return (list.json as { data: Array<{ jti: string }> }).data[0]!.jti;
}

describe('back-channel logout of sessions the service ends', () => {
  it('is sent when an administrator revokes the session', async () => {
    const s = await signedIn();
    expect((await api(t, 'DELETE', `/api/v1/sessions/${await sessionOf(s.user.id)}`, { token: f.admin })).status).toBe(204);
    const token = await logoutTokenFor(s.client);
    expect(token).toMatchObject({ sub: s.user.id, sid: s.sid, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } });
    expect(token.exp! - token.iat!).toBe(120);
  });

  it("carries a pairwise client's pairwise subject when the user is locked", async () => {
    const s = await signedIn({ subject_type: 'pairwise' });
    expect(s.sub).not.toBe(s.user.id);
    expect((await api(t, 'POST', `/api/v1/users/${s.user.id}/lock`, { token: f.admin })).status).toBe(200);
    const token = await logoutTokenFor(s.client);
    expect(token).toMatchObject({ sub: s.sub, sid: s.sid });
  });

  it('is sent when the user ends the session on the account page', async () => {
    const s = await signedIn();
    const account = await s.session.visit(`${t.url}/account`);
    expect(account.status).toBe(200);
    const form = /<form method="post" action="([^"]+)">\s*<input type="hidden" name="csrf_token" value="([^"]+)">\s*<input type="hidden" name="action" value="sessions.end">\s*<input type="hidden" name="session" value="([^"]+)">/.exec(account.html);
    expect(form, 'the account page lists the session with its End button').not.toBeNull();
    const [, action, csrf, jti] = form!;
    await s.session.visit(new URL(action!, t.url).href, new URLSearchParams({ csrf_token: csrf!, action: 'sessions.end', session: jti! }));
    expect((await api(t, 'GET', `/api/v1/sessions/${jti}`, { token: f.admin })).status).toBe(404);
    expect(await logoutTokenFor(s.client)).toMatchObject({ sub: s.user.id, sid: s.sid });
  });

  it("carries a pairwise client's pairwise subject on RP-initiated logout too", async () => {
    const s = await signedIn({ subject_type: 'pairwise' });
    const page = await s.session.visit(`${t.issuer}/session/end?id_token_hint=${s.idToken}&client_id=${s.client.client_id}`);
    const form = /<form[^>]*id="op.logoutForm"[^>]*>([\s\S]*?)<\/form>/.exec(page.html) ?? /<form[^>]*action="([^"]*session\/end\/confirm[^"]*)"[^>]*>/.exec(page.html);
    expect(form, page.html.slice(0, 400)).not.toBeNull();
    const action = /action="([^"]+)"/.exec(form![0])![1]!;
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(form![0])![1]!;
    await s.session.visit(new URL(action.replace(/&amp;/g, '&'), t.issuer).href, new URLSearchParams({ xsrf, logout: 'yes' }));
    expect(await logoutTokenFor(s.client)).toMatchObject({ sub: s.sub, sid: s.sid });
  });
});
