/**
 * Issue 12 item 5 (one request freezes every tenant): a form body with 40,000 parameters to the
 * token or introspection endpoint was parsed in time quadratic in the parameter count (getAll() per
 * key). Now the count is bounded before parsing and repeats are found in one pass; proved by
 * counting operations, not by a clock.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { OAuthError } from '../../src/http/problem.js';
import type { HttpRequest } from '../../src/http/types.js';
import { countParameters, firstRepeated, MAX_FORM_PARAMETERS } from '../../src/http/urlencoded.js';
import { parseForm } from '../../src/oidc/form.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const formReq = (body: string): HttpRequest => ({
  id: 'r', method: 'POST', path: '/oidc/v1/token', rawQuery: '', headers: { 'content-type': 'application/x-www-form-urlencoded' }, ip: '127.0.0.1', body: Buffer.from(body), params: {},
}) as HttpRequest;
const manyParams = (n: number) => Array.from({ length: n }, (_, i) => `p${i}=x`).join('&');

describe('parseForm', () => {
  afterEach(() => vi.restoreAllMocks());

  it('never scans the whole form per key (no getAll/has per parameter)', () => {
    const getAll = vi.spyOn(URLSearchParams.prototype, 'getAll');
    const has = vi.spyOn(URLSearchParams.prototype, 'has');
    const form = parseForm(formReq(manyParams(MAX_FORM_PARAMETERS)));
    expect([...form.keys()]).toHaveLength(MAX_FORM_PARAMETERS);
    expect(getAll).not.toHaveBeenCalled();
    expect(has).not.toHaveBeenCalled();
  });

  it('refuses more parameters than the bound before building anything', () => {
    const ctor = vi.spyOn(globalThis, 'URLSearchParams');
    let error: unknown;
    try {
      parseForm(formReq(manyParams(40_000)));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(OAuthError);
    expect((error as OAuthError).status).toBe(400);
    expect((error as OAuthError).message).toMatch(/at most 1000 parameters/);
    expect(ctor).not.toHaveBeenCalled();
  });

  it('still refuses a repeated parameter, except resource', () => {
    expect(() => parseForm(formReq('grant_type=a&scope=b&grant_type=c'))).toThrow(/'grant_type' parameter must not be provided twice/);
    expect(parseForm(formReq('resource=a&resource=b')).getAll('resource')).toEqual(['a', 'b']);
    expect(firstRepeated(new URLSearchParams('a=1&b=2&c=3'))).toBeUndefined();
  });

  it('counts parameters in one pass over the text', () => {
    expect(countParameters('')).toBe(0);
    expect(countParameters('a=1')).toBe(1);
    expect(countParameters('a=1&b=2&&')).toBe(4);
    const indexOf = vi.spyOn(String.prototype, 'indexOf');
    countParameters(manyParams(5000));
    // One indexOf per separator plus the final miss: linear in the count.
    expect(indexOf.mock.calls.length).toBe(5000);
  });
});

describe('token and introspection endpoints with 40,000 parameters', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it.each(['/oidc/v1/token', '/oidc/v1/token/introspection'])('%s answers 400 invalid_request and the service stays up', async (path) => {
    const body = `grant_type=client_credentials&token=abc&${manyParams(40_000)}`;
    const res = await fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('bootstrap-admin:wrong').toString('base64')}` },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});
