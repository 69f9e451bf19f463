import { describe, expect, it } from 'vitest';
import { Router, type Match } from '../../src/http/router.js';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';

/** A handler that answers with its own name, so a match can be traced back to its route. */
const named = (name: string) => (): HttpResponse => ({ status: 200, body: name });

function router(): Router {
  return new Router()
    .add('GET', '/api/v1/clients', named('list'))
    .add('POST', '/api/v1/clients', named('create'))
    .add('get', '/api/v1/clients/:client_id', named('get'))
    .add('DELETE', '/api/v1/clients/:client_id', named('delete'))
    .add('POST', '/api/v1/clients/:client_id/secret', named('secret'))
    .add('GET', '/api/v1/clients/:client_id/stats', named('stats'))
    .add('GET', '/files/*', named('files'));
}

async function nameOf(m: Match | 'method' | undefined): Promise<string> {
  if (!m || m === 'method') throw new Error(`no match: ${String(m)}`);
  const res = await m.handler({} as HttpRequest);
  return String(res.body);
}

describe('Router', () => {
  const r = router();

  it('matches exact paths by method', async () => {
    expect(await nameOf(r.match('GET', '/api/v1/clients'))).toBe('list');
    expect(await nameOf(r.match('POST', '/api/v1/clients'))).toBe('create');
    const m = r.match('GET', '/api/v1/clients') as Match;
    expect(m.params).toEqual({});
    expect(m.pattern).toBe('/api/v1/clients');
  });

  it('extracts and decodes parameters', async () => {
    const m = r.match('GET', '/api/v1/clients/abc%20def%2F1') as Match;
    expect(await nameOf(m)).toBe('get');
    expect(m.params).toEqual({ client_id: 'abc def/1' });
    expect(m.pattern).toBe('/api/v1/clients/:client_id');
    const s = r.match('POST', '/api/v1/clients/xyz/secret') as Match;
    expect(await nameOf(s)).toBe('secret');
    expect(s.params).toEqual({ client_id: 'xyz' });
  });

  it('upper-cases the method of a route', async () => {
    expect(await nameOf(r.match('GET', '/api/v1/clients/x'))).toBe('get');
    expect(r.match('get', '/api/v1/clients/x')).toBe('method');
  });

  it('answers "method" for a known path under another method (405), undefined for unknown paths (404)', () => {
    expect(r.match('PUT', '/api/v1/clients')).toBe('method');
    expect(r.match('PATCH', '/api/v1/clients/x')).toBe('method');
    expect(r.match('GET', '/api/v1/clients/x/secret')).toBe('method');
    expect(r.match('GET', '/api/v1/users')).toBeUndefined();
    expect(r.match('GET', '/api/v1/clients/x/unknown')).toBeUndefined();
  });

  it('keeps a path registered as itself to its own methods: never a parameter of a pattern route', async () => {
    const keys = new Router()
      .add('POST', '/api/v1/jwks/rotate', named('rotate'))
      .add('GET', '/api/v1/jwks/:kid', named('get-key'))
      .add('DELETE', '/api/v1/jwks/:kid', named('retire-key'));
    expect(await nameOf(keys.match('POST', '/api/v1/jwks/rotate'))).toBe('rotate');
    expect(keys.match('GET', '/api/v1/jwks/rotate')).toBe('method');
    expect(keys.match('DELETE', '/api/v1/jwks/rotate')).toBe('method');
    expect(keys.allowedMethods('/api/v1/jwks/rotate')).toEqual(['POST']);
    expect(await nameOf(keys.match('DELETE', '/api/v1/jwks/k1'))).toBe('retire-key');
  });

  it('serves HEAD with the GET route', async () => {
    expect(await nameOf(r.match('HEAD', '/api/v1/clients'))).toBe('list');
    expect(await nameOf(r.match('HEAD', '/api/v1/clients/x/stats'))).toBe('stats');
  });

  it('does not match extra, missing or empty segments', () => {
    expect(r.match('GET', '/api/v1/clients/')).toBeUndefined();
    expect(r.match('GET', '/api/v1/clients//stats')).toBeUndefined();
    expect(r.match('GET', '/api/v1/clients/a/stats/more')).toBeUndefined();
    expect(r.match('GET', '/api/v1')).toBeUndefined();
    expect(r.match('GET', '/API/v1/clients')).toBeUndefined();
  });

  it('does not match a parameter that is not valid percent-encoding', () => {
    expect(r.match('GET', '/api/v1/clients/%E0%A4%A')).toBeUndefined();
  });

  it('gives the rest of the path to a wildcard', async () => {
    const m = r.match('GET', '/files/a/b/c.txt') as Match;
    expect(await nameOf(m)).toBe('files');
    expect(m.params).toEqual({ '*': 'a/b/c.txt' });
  });

  it('names the methods a path answers, for the Allow header of a 405', () => {
    expect(r.allowedMethods('/api/v1/clients')).toEqual(['GET', 'HEAD', 'POST']);
    expect(r.allowedMethods('/api/v1/clients/x')).toEqual(['DELETE', 'GET', 'HEAD']);
    expect(r.allowedMethods('/api/v1/clients/x/secret')).toEqual(['POST']);
    expect(r.allowedMethods('/nowhere')).toEqual([]);
  });

  it('lists its routes', () => {
    expect(r.routes).toContainEqual({ method: 'GET', pattern: '/api/v1/clients/:client_id' });
    expect(r.routes).toHaveLength(7);
  });
});
