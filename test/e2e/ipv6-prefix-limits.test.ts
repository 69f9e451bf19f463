/**
 * Per-address limits of the end-user forms count an IPv6 client by its /64 (sixth audit of
 * 2026-12-01). A host given a /64 picks any address in it, and the limits counted each full
 * address apart: 24 sign-ups from 2001:db8:1:2::1 ... ::24 all passed the 20-an-hour limit, the
 * reset requests' per-address limit and the sign-in attempts' per-minute limit likewise. The
 * client's address comes from X-Forwarded-For behind a trusted proxy (HTTP_TRUSTED_PROXIES), as a
 * deployment behind a load balancer sees it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ipLimitKey } from '../../src/http/ip.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, type Fetch } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

/** fetch as a client at `ip` behind the trusted proxy (the test's own loopback connection). */
const from = (ip: string): Fetch => (url, init = {}) => fetch(url, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers).entries()), 'x-forwarded-for': ip } });

describe('per-address limits and IPv6 prefixes', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_SIGNUP_ENABLED: 'true', HTTP_TRUSTED_PROXIES: '127.0.0.1,::1', SECURITY_LOGIN_PER_IP_PER_MINUTE: '3' });
    origin = new URL(t.issuer).origin;
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('the key: IPv4 as it is, IPv6 by its /64', () => {
    expect(ipLimitKey('192.0.2.7')).toBe('192.0.2.7');
    expect(ipLimitKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(ipLimitKey('2001:db8:1:2:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(ipLimitKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
  });

  it('hostile: sign-ups from many addresses of one /64 reach the per-address limit (429)', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 21; i++) {
      const browser = new HttpSession(t.issuer, { email: '', password: '' }, from(`2001:db8:1:2::${i.toString(16)}`));
      const signIn = await browser.visit(`${origin}/account`);
      const link = new URL(/href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!, origin).href;
      const form = await browser.visit(link);
      const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
      statuses.push((await browser.visit(link, new URLSearchParams({ csrf_token: csrf, email: `v6-${i}-${Date.now()}@example.com`, password: 'Ipv6-signup-pass-7' }))).status);
    }
    expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true);
    expect(statuses[20]).toBe(429);
    // Another /64 has its own count.
    const other = new HttpSession(t.issuer, { email: '', password: '' }, from('2001:db8:1:3::1'));
    const signIn = await other.visit(`${origin}/account`);
    expect(/\/signup"/.test(signIn.html)).toBe(true);
  });

  it('hostile: reset requests from many addresses of one /64 reach the per-address limit (audited ip_limit)', async () => {
    for (let i = 1; i <= 21; i++) {
      const browser = new HttpSession(t.issuer, { email: '', password: '' }, from(`2001:db8:5:6::${i.toString(16)}`));
      const form = await browser.visit(`${origin}/account/password/forgot`);
      const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
      expect((await browser.visit(`${origin}/account/password/forgot`, new URLSearchParams({ csrf_token: csrf, email: `nobody-${i}@example.com` }))).status).toBe(200);
    }
    // The limits are looked at after the answer.
    const limited = async () => (await t.app.ctx.storage.audit.list('default', { type: 'password_reset_requested' }, { limit: 100, include_count: false })).items.filter((e) => e.details.reason === 'ip_limit');
    for (let i = 0; i < 50 && (await limited()).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect((await limited()).map((e) => e.username)).toEqual(['nobody-21@example.com']);
  });

  it('hostile: sign-in attempts from many addresses of one /64 reach the per-minute limit', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 4; i++) {
      const browser = new HttpSession(t.issuer, { email: '', password: '' }, from(`2001:db8:7:8::${i.toString(16)}`));
      const signIn = await browser.visit(`${origin}/account`);
      const action = new URL(/<form method="post" action="([^"]*\/login)"/.exec(signIn.html)![1]!, origin).href;
      const csrf = /name="csrf_token" value="([^"]*)"/.exec(signIn.html)![1]!;
      statuses.push((await browser.visit(action, new URLSearchParams({ csrf_token: csrf, email: `nobody-${i}@example.com`, password: 'Wrong-password-8' }))).status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
  });
});
