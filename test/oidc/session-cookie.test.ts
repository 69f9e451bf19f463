/**
 * The session cookie as src/oidc/session-cookie.ts reads and writes it, against the `cookies`
 * library oidc-provider 9 uses (through Koa), on the same headers: which value a Cookie header
 * yields when signed, and the Set-Cookie lines of a save (http and https), but for the `expires`
 * that oidc-provider's session middleware appends.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { sessionSetCookies, signedSessionCookie } from '../../src/oidc/session-cookie.js';

interface CookiesLib {
  get(name: string, opts?: { signed: boolean }): string | undefined;
  set(name: string, value: string, opts: Record<string, unknown>): void;
}
type CookiesCtor = new (req: unknown, res: unknown, opts: { keys: string[]; secure?: boolean }) => CookiesLib;
const Cookies = createRequire(import.meta.url)('cookies') as CookiesCtor;

const KEYS = ['k3y-of-this-tenant_base64url-ish'];
const OTHER = ['another-tenant-key'];

function jar(cookie: string | undefined, keys = KEYS, secure = false) {
  const headers: Record<string, string | string[]> = {};
  const res = { getHeader: (n: string) => headers[n.toLowerCase()], setHeader: (n: string, v: string | string[]) => void (headers[n.toLowerCase()] = v) };
  const lib = new Cookies({ headers: cookie === undefined ? {} : { cookie }, protocol: secure ? 'https' : 'http', socket: { encrypted: secure } }, res, { keys, secure });
  return { lib, setCookies: () => headers['set-cookie'] as string[] | undefined };
}

/** A Set-Cookie pair as oidc-provider writes it (cookies.long of provider.ts), to take the signature from. */
function issued(id: string, keys = KEYS, secure = false): string[] {
  const { lib, setCookies } = jar(undefined, keys, secure);
  lib.set('_session', id, { signed: true, httpOnly: true, sameSite: 'lax' });
  return setCookies()!;
}
const pairOf = (lines: string[]) => lines.map((l) => l.split(';', 1)[0]).join('; ');

describe('reading: the value the library returns for a signed get, or nothing', () => {
  const id = 'Zm9vYmFyLXNlc3Npb24taWQtMTIzNDU2Nzg5MA';
  const good = pairOf(issued(id));
  const headers = [
    good,
    `lang=de; ${good}; other=1`,
    `${good.split('; ')[1]}; ${good.split('; ')[0]}`,
    `_session=${id}`,
    `_session.sig=${good.split('; ')[1]!.split('=')[1]}`,
    pairOf(issued(id, OTHER)),
    `${good.split('; ')[0]}x; ${good.split('; ')[1]}`,
    `_session=other; ${good}`,
    `${good}; _session=other`,
    `x_session=${id}; ${good.split('; ')[1]}`,
    '',
    `_session=; ${good.split('; ')[1]}`,
  ];
  it.each(headers.map((h) => [h]))('%s', (header) => {
    const expected = jar(header).lib.get('_session', { signed: true });
    const mine = signedSessionCookie(header, KEYS);
    // Served only where the library yields the same value (never where it yields none).
    if (mine) expect(mine.id).toBe(expected);
    else if (expected !== undefined) expect(header).toMatch(/"/);
    expect(Boolean(mine)).toBe(expected !== undefined && expected !== '');
  });
});

describe('writing: the Set-Cookie lines of a save', () => {
  it.each([false, true])('secure: %s', (secure) => {
    const id = 'c2Vzc2lvbi1pZC1mb3Itd3JpdGluZy0xMjM0NTY3';
    const theirs = issued(id, KEYS, secure);
    const cookie = signedSessionCookie(pairOf(theirs), KEYS)!;
    const exp = 1_800_000_000;
    const mine = sessionSetCookies(cookie, exp, secure);
    const expires = `; expires=${new Date(exp * 1000).toUTCString()}`;
    expect(mine).toEqual(theirs.map((l) => l + expires));
  });
});
