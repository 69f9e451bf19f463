/**
 * One sign-out, one logout (fifth session of 2026-12-01): the end-session confirmation POST sent
 * several times at once with the same form secret and session cookie was accepted by each copy
 * (each wrote a `logout` audit entry and sent every client a back-channel logout token with a jti
 * of its own). Now exactly one copy signs out; the others are answered as oidc-provider answers a
 * replay after the sign-out (400, "could not find logout details"). And a confirmation with nobody
 * signed in (a visitor opening /session/end) writes no `logout` entry, nor does its accountless
 * browser state show up as a session in the Management API or the statistics.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import { HttpSession, type CodeFlowClient } from '../helpers/code-flow.js';
import { createUser } from '../helpers/users.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65528/cb';
const COPIES = 6;

let f: UserFlowFixture;
let t: TestApp;
let receiver: Server;
let receiverUrl: string;
/** Logout tokens received, decoded. */
const received: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  f = await startUserFlowFixture(REDIRECT, 'svc:clients:write svc:users:write svc:sessions:read', { SECURITY_RATE_LIMIT_READ: '10000' });
  t = f.t;
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(decodeJwt(new URLSearchParams(body).get('logout_token') ?? '') as Record<string, unknown>);
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

/** The end-session form of `html` (the confirmation page, or the auto-submitted one of a visitor): its action and secret. */
function endSessionForm(html: string, base: string): { action: string; xsrf: string } {
  const form = /<form\b[^>]*action="([^"]*session\/end\/confirm[^"]*)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
  expect(form, html.slice(0, 400)).not.toBeNull();
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(form![0])?.[1];
  expect(xsrf).toBeTruthy();
  return { action: new URL(form![1]!.replace(/&amp;/g, '&'), base).href, xsrf: xsrf! };
}

/** `copies` identical confirmation POSTs at once, with the browser's cookies: their statuses. */
async function confirmAtOnce(session: HttpSession, form: { action: string; xsrf: string }, copies: number): Promise<number[]> {
  const body = new URLSearchParams({ xsrf: form.xsrf, logout: 'yes' }).toString();
  const headers = { accept: 'text/html', cookie: session.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' };
  const answers = await Promise.all(Array.from({ length: copies }, () => fetch(form.action, { method: 'POST', headers, body, redirect: 'manual' })));
  await Promise.all(answers.map((a) => a.arrayBuffer()));
  return answers.map((a) => a.status).sort();
}

const logoutEntries = async (filter: { user_id?: string }) => (await t.app.ctx.storage.audit.list('default', { type: 'logout', ...filter }, { limit: 100, include_count: true })).total_count!;

describe('end-session confirmation', () => {
  it('signs out once when the same confirmation is sent several times at once: one audit entry, one logout token per client', async () => {
    // A few rounds: the copies must race on every backend, whatever the scheduling of one run.
    for (let round = 0; round < 3; round++) {
      const user = await createUser(t, { email_verified: true });
      const session = new HttpSession(t.issuer, user);
      const clients: CodeFlowClient[] = [await f.newClient({ backchannel_logout_uri: receiverUrl }), await f.newClient({ backchannel_logout_uri: receiverUrl })];
      const idTokens: string[] = [];
      for (const client of clients) idTokens.push((await session.tokens(client, { scope: 'openid' })).id_token!);
      const config = new oidc.Configuration({ issuer: t.issuer, end_session_endpoint: `${t.issuer}/session/end` }, clients[0]!.client_id, clients[0]!.client_secret);
      oidc.allowInsecureRequests(config);
      const page = await session.visit(oidc.buildEndSessionUrl(config, { id_token_hint: idTokens[0]! }).href);
      expect(page.status).toBe(200);

      const statuses = await confirmAtOnce(session, endSessionForm(page.html, t.issuer), COPIES);
      expect(statuses, `round ${round}`).toEqual([303, ...Array<number>(COPIES - 1).fill(400)]);

      expect(await logoutEntries({ user_id: user.id }), `round ${round}`).toBe(1);
      // Every client is told once; a second token would come right after the first.
      const mine = (client: CodeFlowClient) => received.filter((p) => p.aud === client.client_id);
      await expect.poll(() => clients.every((c) => mine(c).length >= 1), { timeout: 5000 }).toBe(true);
      await new Promise((r) => setTimeout(r, 500));
      for (const client of clients) expect(mine(client).length, `round ${round}: ${client.client_id}`).toBe(1);

      // The session is gone: the same confirmation once more is the usual replay answer.
      expect(await confirmAtOnce(session, endSessionForm(page.html, t.issuer), 1)).toEqual([400]);
      expect((await api(t, 'GET', `/api/v1/sessions?username=${user.id}`, { token: f.admin })).json.data).toEqual([]);
    }
  });

  it('writes no logout entry when nobody was signed in', async () => {
    const before = await logoutEntries({});
    const visitor = new HttpSession(t.issuer, { email: 'nobody@example.com', password: 'unused' });
    for (let i = 0; i < 2; i++) {
      // A visitor's GET: oidc-provider keeps the form secret in a session without an account.
      const page = await visitorPage(visitor);
      expect(await confirmAtOnce(visitor, endSessionForm(page, t.issuer), 1)).toEqual([303]);
    }
    expect(await logoutEntries({})).toBe(before);
  });

  it('writes no logout entry for "Stay signed in" that ends nothing, and one when it signs the user out of the application', async () => {
    const user = await createUser(t, { email_verified: true });
    const session = new HttpSession(t.issuer, user);
    const client = await f.newClient({ backchannel_logout_uri: receiverUrl });
    const idToken = (await session.tokens(client, { scope: 'openid' })).id_token!;
    const stay = async (url: string) => {
      const form = endSessionForm((await session.visit(url)).html, t.issuer);
      const res = await fetch(form.action, { method: 'POST', redirect: 'manual', headers: { cookie: session.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ xsrf: form.xsrf }) });
      await res.arrayBuffer();
      return res.status;
    };
    // Without an application oidc-provider changes nothing: the user is still signed in everywhere.
    expect(await stay(`${t.issuer}/session/end`)).toBe(303);
    expect(await logoutEntries({ user_id: user.id })).toBe(0);
    // From an application, "Stay signed in" still signs the user out of that application (its
    // grant revoked, a logout token sent): that is audited, naming the application.
    expect(await stay(`${t.issuer}/session/end?id_token_hint=${idToken}`)).toBe(303);
    const entries = await t.app.ctx.storage.audit.list('default', { type: 'logout', user_id: user.id }, { limit: 5 });
    expect(entries.items.map((e) => e.client_id)).toEqual([client.client_id]);
  });

  it("lists and counts no visitor's accountless session in the Management API", async () => {
    // A visitor's state, left unconfirmed: a stored session without an account.
    await visitorPage(new HttpSession(t.issuer, { email: 'nobody@example.com', password: 'unused' }));
    expect((await t.app.ctx.storage.oidc.listSessions('default', {})).some((row) => !row.payload.accountId)).toBe(true);
    const all = await api(t, 'GET', '/api/v1/sessions?include_count=true&limit=100', { token: f.admin });
    expect(all.status).toBe(200);
    expect((all.json.data as Array<{ account_id: string | null }>).filter((s) => s.account_id === null)).toEqual([]);
    expect((await api(t, 'GET', '/api/v1/sessions?active=false', { token: f.admin })).json.data).toEqual([]);
    const stats = await api(t, 'GET', '/api/v1/stats', { token: await t.token('svc:stats:read') });
    expect(stats.status).toBe(200);
    expect(stats.json.data.sessions).toEqual({ total: all.json.pagination.total_count, active: all.json.pagination.total_count });
  });
});

/** A visitor's GET of /session/end (no sign-in): the page oidc-provider answers with. */
async function visitorPage(visitor: HttpSession): Promise<string> {
  const page = await visitor.visit(`${t.issuer}/session/end`);
  expect(page.status).toBe(200);
  expect(visitor.cookieHeader()).toContain('_session=');
  return page.html;
}
