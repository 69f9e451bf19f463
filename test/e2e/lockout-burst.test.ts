/**
 * The brute-force lock under concurrent guesses (third audit of 2026-11-30): thirty sign-in forms
 * posted at once, the right password last. Each attempt read the account before its Argon2 check
 * and decided on that stale record afterwards, and every lock started the count over: ~20 answers
 * of 401 instead of 4, nine `account_locked` entries, and a 303 for the right password while the
 * account was locked. Now the failures are counted atomically past the threshold, one attempt
 * writes the lock, and a right password that finishes after the lock gets the lock's answer.
 * Both backends (PostgreSQL + Redis in the postgresql project).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, type CodeFlowClient } from '../helpers/code-flow.js';
import { createUser } from '../helpers/users.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';
import * as oidc from 'openid-client';

const REDIRECT = 'https://rp.example.com/cb';

/** An open sign-in form of a fresh authorization request: where it posts, its hidden fields and the cookies. */
async function openForm(t: TestApp, client: CodeFlowClient): Promise<{ action: string; fields: URLSearchParams; cookie: string }> {
  const session = new HttpSession(t.issuer, { email: '', password: '' });
  const config = new oidc.Configuration({ issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth` }, client.client_id, client.client_secret);
  oidc.allowInsecureRequests(config);
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT, scope: 'openid', state: oidc.randomState(),
    code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256',
  });
  const page = await session.visit(url.href);
  const form = [...page.html.matchAll(/<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/gi)].find((f) => /name="password"/.test(f[2]!));
  if (!form) throw new Error(`no sign-in form (HTTP ${page.status})`);
  const fields = new URLSearchParams();
  for (const m of form[2]!.matchAll(/<input\b[^>]*type="hidden"[^>]*>/gi)) {
    const name = /\bname="([^"]*)"/.exec(m[0])?.[1];
    if (name) fields.set(name, (/\bvalue="([^"]*)"/.exec(m[0])?.[1] ?? '').replace(/&amp;/g, '&'));
  }
  return { action: new URL(form[1]!.replace(/&amp;/g, '&'), page.url).href, fields, cookie: session.cookieHeader() };
}

/** Posts a sign-in form as a browser would; the answer's status and Retry-After. */
async function post(f: { action: string; fields: URLSearchParams; cookie: string }, email: string, password: string): Promise<{ status: number; retryAfter: string | null }> {
  const body = new URLSearchParams(f.fields);
  body.set('email', email);
  body.set('password', password);
  const res = await fetch(f.action, { method: 'POST', redirect: 'manual', headers: { cookie: f.cookie, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' }, body });
  await res.arrayBuffer();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

describe('the brute-force lock under a burst of concurrent sign-ins', () => {
  let t: TestApp;
  let client: CodeFlowClient;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    client = await codeFlowClient(t, await t.token('svc:clients:write'), REDIRECT);
  });
  afterAll(async () => t?.close());

  it('answers at most four wrong passwords with 401, everything after (the right password included) with the lock, and locks once', async () => {
    const victim = await createUser(t);
    const forms = await Promise.all(Array.from({ length: 30 }, () => openForm(t, client)));
    const statuses = await Promise.all(forms.map(async (f, i) => (await post(f, victim.email, i === forms.length - 1 ? victim.password : `Wrong-guess-${i}`)).status));
    const wrong = statuses.slice(0, -1);
    expect(wrong.filter((s) => s === 401).length).toBeLessThanOrEqual(4);
    expect(wrong.every((s) => s === 401 || s === 403), JSON.stringify(statuses)).toBe(true);
    // The right password never stands out from the locked answers (it may have come before the
    // fifth failure was counted, and then it signs in: that guess was one of the five).
    const right = statuses.at(-1)!;
    if (right !== 403) expect(wrong.filter((s) => s === 401).length, JSON.stringify(statuses)).toBeLessThan(4);
    const audit = await api(t, 'GET', `/api/v1/audit?type=account_locked&limit=100`, { token: await t.token('svc:audit:read') });
    expect(audit.json.data.filter((e: { user_id: string }) => e.user_id === victim.id)).toHaveLength(1);
    const user = await api(t, 'GET', `/api/v1/users/${victim.id}`, { token: await t.token('svc:users:read') });
    expect(user.json.data.locked).toBe(true);
  });
});

describe('the per-address sign-in limit', () => {
  let t: TestApp;
  afterAll(async () => t?.close());

  it('answers its 429 with Retry-After', async () => {
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '2' });
    const client = await codeFlowClient(t, await t.token('svc:clients:write'), REDIRECT);
    const form = await openForm(t, client);
    await awayFromWindowEdge(60);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await post(form, 'nobody@example.com', `Wrong-${i}-password`));
    expect(answers.map((a) => a.status)).toEqual([401, 401, 429]);
    expect(answers[2]!.retryAfter).toMatch(/^\d+$/);
  });
});
