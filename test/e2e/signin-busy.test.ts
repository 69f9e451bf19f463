/**
 * A burst of sign-ins beyond the Argon2 pool's bounded queue: the extra ones get the sign-in page
 * again with 503 and Retry-After (never a 500 or a JSON error), the admitted ones sign in.
 * The sign-in forms are opened and posted with plain HTTP (bench/flows.ts, the bench's own client).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, openLoginForm, type LoginForm } from '../../bench/flows.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createClient, createUser } from '../helpers/users.js';

let t: TestApp;
let form: LoginForm;

beforeAll(async () => {
  // One Argon2 thread and one waiting task: the third concurrent sign-in finds the queue full.
  t = await startTestApp({ WORKERS_ARGON2_THREADS: '1', WORKERS_ARGON2_MAX_QUEUE: '1', SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
  const rp = await createClient(t, { client_name: 'busy rp', redirect_uris: ['https://rp.example/cb'], grant_types: ['authorization_code'], response_types: ['code'], scope: 'openid', first_party: true });
  const user = await createUser(t);
  form = await openLoginForm(new BrowserSession(t.url), { client_id: rp.client_id, client_secret: rp.client_secret, redirect_uri: 'https://rp.example/cb' }, { login: user.email, password: user.password }, { scope: 'openid' });
});
afterAll(async () => t?.close());

describe('sign-in while the Argon2 queue is full', () => {
  it('answers the overflow with the sign-in page, 503 and Retry-After, and serves the admitted sign-ins', async () => {
    const post = async () => {
      const res = await fetch(form.url, { method: 'POST', headers: { cookie: form.cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: form.body, redirect: 'manual' });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), type: res.headers.get('content-type'), body: await res.text() };
    };
    const answers = await Promise.all(Array.from({ length: 12 }, post));
    const busy = answers.filter((a) => a.status === 503);
    const ok = answers.filter((a) => a.status === 303);
    expect(ok.length + busy.length).toBe(answers.length);
    expect(ok.length).toBeGreaterThanOrEqual(2);
    expect(busy.length).toBeGreaterThan(0);
    for (const b of busy) {
      expect(b.retryAfter).toMatch(/^\d+$/);
      expect(b.type).toMatch(/^text\/html/);
      expect(b.body).toContain('Too many sign-ins are in progress');
      expect(b.body).toContain('name="password"');
    }
    // The pool drains: the same form signs in again afterwards.
    expect((await post()).status).toBe(303);
  });
});
