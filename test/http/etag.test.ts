/**
 * Public documents (src/http/etag.ts, JWKS and discovery through tenancy/oidc-routes.ts): 200 with
 * the body for GET, for HEAD none but GET's length, 304 for a held version (lists, weak tags, `*`), and one frozen
 * headers object per version of a document, so no answer can change another's headers.
 */
import { describe, expect, it } from 'vitest';
import { etagMatches, etagOf, publicDocument } from '../../src/http/etag.js';
import { documentResponse } from '../../src/tenancy/oidc-routes.js';

const doc = (text: string) => {
  const body = Buffer.from(text);
  return { body, etag: etagOf(body) };
};
const get = (headers: Record<string, string> = {}) => ({ method: 'GET', headers });
const HEADERS = { 'content-type': 'application/json', 'cache-control': 'public, max-age=60' };

describe('publicDocument', () => {
  it('GET answers the body with the headers and the ETag; HEAD the same headers and GET`s length without a body', () => {
    const d = doc('{"keys":[]}');
    const res = publicDocument(get(), d, HEADERS);
    expect(res).toEqual({ status: 200, headers: { ...HEADERS, etag: d.etag }, body: d.body });
    const head = publicDocument({ method: 'HEAD', headers: {} }, d, HEADERS);
    expect(head.body).toBeUndefined();
    expect(head.contentLength).toBe(d.body.length);
    expect(head.headers).toBe(res.headers);
  });

  it('304 for the version the client holds, in a list, weak, or `*`; 200 for another version', () => {
    const d = doc('{"a":1}');
    for (const held of [d.etag, `"x", ${d.etag}`, `W/${d.etag}`, '*']) {
      const res = publicDocument(get({ 'if-none-match': held }), d, HEADERS);
      expect(res.status).toBe(304);
      expect(res.body).toBeUndefined();
      expect(res.headers?.etag).toBe(d.etag);
    }
    expect(publicDocument(get({ 'if-none-match': '"old"' }), d, HEADERS).status).toBe(200);
    expect(etagMatches(undefined, d.etag)).toBe(false);
  });

  it('one frozen headers object per version: shared by its answers, new for a new body', () => {
    const v1 = doc('{"v":1}');
    const a = publicDocument(get(), v1, HEADERS).headers!;
    const b = publicDocument(get(), v1, HEADERS).headers!;
    expect(b).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    // An answer that adds a header builds a new object; writing into the shared one throws.
    expect(() => {
      (a as Record<string, unknown>)['set-cookie'] = 'x=1';
    }).toThrow(TypeError);
    expect(publicDocument(get(), v1, HEADERS).headers).not.toHaveProperty('set-cookie');
    const v2 = doc('{"v":2}');
    const c = publicDocument(get(), v2, HEADERS).headers!;
    expect(c).not.toBe(a);
    expect(c.etag).toBe(v2.etag);
    expect(a.etag).toBe(v1.etag);
  });

  it('one body served with other headers gets those headers, not the first ones', () => {
    const d = doc('{"same":true}');
    const json = publicDocument(get(), d, HEADERS).headers!;
    const other = { ...HEADERS, 'content-type': 'application/jwk-set+json' };
    expect(publicDocument(get(), d, other).headers).toMatchObject({ 'content-type': 'application/jwk-set+json', etag: d.etag });
    expect(json['content-type']).toBe('application/json');
  });

  it('documentResponse: JWKS and discovery keep their own content types and CORS', () => {
    const jwks = documentResponse(get(), doc('{"keys":[]}'), 'application/jwk-set+json; charset=utf-8');
    const disco = documentResponse(get(), doc('{"issuer":"x"}'));
    expect(jwks.headers).toMatchObject({ 'content-type': 'application/jwk-set+json; charset=utf-8', 'access-control-allow-origin': '*' });
    expect(disco.headers).toMatchObject({ 'content-type': expect.stringMatching(/^application\/json/), 'access-control-allow-origin': '*' });
    expect(jwks.headers?.['cache-control']).toBe(disco.headers?.['cache-control']);
  });
});
