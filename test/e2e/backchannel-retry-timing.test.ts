/**
 * Back-channel logout attempts at 0 s, 2 s and 10 s after the logout (CONTRACT.md), whatever the
 * receiver does (fifth session of 2026-12-01): the next attempt used to be scheduled after the
 * previous one had ended, so a receiver that never answers (each attempt waiting out its 5 s
 * timeout) got them at 0, ~7 and ~20 s. Now an attempt still open when the next is due is ended
 * then and audited as failed; one answering 500 gets its attempts at the same times.
 *
 * Real timers (the attempts are real HTTP requests to local receivers): about 10.5 s.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import type { CodeFlowClient } from '../helpers/code-flow.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65527/cb';

interface Receiver {
  server: Server;
  url: string;
  /** When each request arrived (Date.now()). */
  arrivals: number[];
}

/** `answer` undefined: the request is read and never answered. */
async function startReceiver(answer: number | undefined): Promise<Receiver> {
  const r: Receiver = { server: createServer(), url: '', arrivals: [] };
  r.server.on('request', (req: IncomingMessage, res) => {
    r.arrivals.push(Date.now());
    req.resume();
    req.on('end', () => {
      if (answer !== undefined) res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}/bcl`;
  return r;
}

let f: UserFlowFixture;
let t: TestApp;
let silent: Receiver;
let failing: Receiver;

beforeAll(async () => {
  f = await startUserFlowFixture(REDIRECT);
  t = f.t;
  [silent, failing] = await Promise.all([startReceiver(undefined), startReceiver(500)]);
});
afterAll(async () => {
  await f?.t.close();
  for (const r of [silent, failing]) {
    r?.server.closeAllConnections();
    await new Promise((resolve) => r?.server.close(resolve));
  }
});

const attempts = async (client: CodeFlowClient) =>
  (await t.app.ctx.storage.audit.list('default', { type: 'backchannel_logout', client_id: client.client_id }, { limit: 10 })).items
    .map((e) => ({ status: e.status, ...(e.details as { attempt: number; error?: string; status_code?: number }) }))
    .sort((a, b) => a.attempt - b.attempt);

describe('back-channel logout retries', () => {
  it('start at 0 s, 2 s and 10 s after the logout, for a receiver that never answers and one that answers 500', async () => {
    const toSilent = await f.newClient({ backchannel_logout_uri: silent.url });
    const toFailing = await f.newClient({ backchannel_logout_uri: failing.url });
    const idToken = (await f.session.tokens(toSilent, { scope: 'openid' })).id_token!;
    await f.session.tokens(toFailing, { scope: 'openid' });

    const page = await f.session.visit(`${t.issuer}/session/end?id_token_hint=${idToken}`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.html)?.[1];
    expect(xsrf, page.html.slice(0, 300)).toBeTruthy();
    const started = Date.now();
    const confirm = await fetch(`${t.issuer}/session/end/confirm`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: f.session.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf: xsrf!, logout: 'yes' }),
    });
    expect(confirm.status).toBe(303);

    // The third attempt is due at 10 s; against the old schedule it came at ~20 s.
    while (!(silent.arrivals.length >= 3 && failing.arrivals.length >= 3) && Date.now() - started < 12_500) await new Promise((r) => setTimeout(r, 100));
    for (const [name, r] of [['never answers', silent], ['answers 500', failing]] as const) {
      const at = r.arrivals.map((a) => a - started);
      const told = `${name}: attempts at ${at.join(', ')} ms`;
      expect(at, told).toHaveLength(3);
      expect(at[0], told).toBeLessThan(1000);
      expect(at[1], told).toBeGreaterThanOrEqual(1900);
      expect(at[1], told).toBeLessThan(3000);
      expect(at[2], told).toBeGreaterThanOrEqual(9900);
      expect(at[2], told).toBeLessThan(11_000);
    }

    // The silent receiver's first attempt ended when the second was due; the second at its own
    // 5 s timeout (the third was not due yet). Each audited as a failure to be retried. The third
    // is ended here by dropping its connection rather than waited for (5 s more): the last failure.
    await expect.poll(async () => (await attempts(toSilent)).length, { timeout: 2000 }).toBe(2);
    silent.server.closeAllConnections();
    await expect.poll(async () => (await attempts(toSilent)).length, { timeout: 2000 }).toBe(3);
    expect(await attempts(toSilent)).toEqual([
      expect.objectContaining({ attempt: 1, status: 'warning', error: 'no answer before attempt 2 was due' }),
      expect.objectContaining({ attempt: 2, status: 'warning', error: 'timed out after 5000 ms' }),
      expect.objectContaining({ attempt: 3, status: 'failed' }),
    ]);
    await expect.poll(async () => (await attempts(toFailing)).length, { timeout: 2000 }).toBe(3);
    expect((await attempts(toFailing)).map((a) => [a.attempt, a.status, a.status_code])).toEqual([
      [1, 'warning', 500],
      [2, 'warning', 500],
      [3, 'failed', 500],
    ]);
  }, 30_000);
});
