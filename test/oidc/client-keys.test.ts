/** The jwks_uri caching rules of ClientKeyCache (oidc-provider's): freshness, refetch when stale, one fetch at a time. */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ClientKeyCache, freshUntilOf, importJwks, type JwksFetchResult } from '../../src/oidc/client-keys.js';
import type { ClientRecord } from '../../src/storage/types.js';

function publicJwk(kid: string) {
  return { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }), kid, use: 'sig' };
}

function record(metadata: Partial<ClientRecord['metadata']>): ClientRecord {
  return {
    client_id: 'c1',
    secret_hash: null,
    secret_sealed: null,
    secret_generation: 0,
    active: true,
    created_at: '',
    updated_at: '',
    last_used_at: null,
    tokens_issued: 0,
    metadata: {
      client_name: 'c',
      application_type: 'web',
      redirect_uris: [],
      post_logout_redirect_uris: [],
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'private_key_jwt',
      contacts: [],
      tags: [],
      require_pkce: false,
      first_party: false,
      ...metadata,
    },
  };
}

describe('ClientKeyCache with jwks_uri', () => {
  it('is stale before the first fetch, fresh for the period the answer gave, stale again after', async () => {
    let now = 1000;
    const fetched: string[] = [];
    const cache = new ClientKeyCache({
      secretOf: () => undefined,
      now: () => now,
      fetchJwks: async (uri): Promise<JwksFetchResult> => {
        fetched.push(uri);
        return { status: 200, body: { keys: [publicJwk(`k${fetched.length}`)] }, freshUntil: now + 60 };
      },
    });
    const r = record({ jwks_uri: 'https://rp.example/jwks' });
    expect(cache.stale(r)).toBe(true);
    expect(cache.publicKeys(r)).toEqual([]);
    await Promise.all([cache.refresh(r), cache.refresh(r), cache.refresh(r)]);
    expect(fetched).toHaveLength(1); // concurrent refreshes share one fetch
    expect(cache.publicKeys(r).map((k) => k.kid)).toEqual(['k1']);
    now += 59;
    expect(cache.stale(r)).toBe(false);
    await cache.refresh(r); // fresh: no fetch
    expect(fetched).toHaveLength(1);
    now += 1;
    expect(cache.stale(r)).toBe(true);
    await cache.refresh(r);
    expect(cache.publicKeys(r).map((k) => k.kid)).toEqual(['k2']);
  });

  it('keeps the last good keys when the answer is not 200, and stays fresh for the period', async () => {
    let status = 200;
    const cache = new ClientKeyCache({
      secretOf: () => undefined,
      now: () => 5000,
      fetchJwks: async () => ({ status, body: { keys: [publicJwk('good')] }, freshUntil: 4000 }),
    });
    const r = record({ jwks_uri: 'https://rp.example/jwks' });
    await cache.refresh(r);
    status = 500;
    await expect(cache.refresh(r)).rejects.toThrow(/status code 500/);
    expect(cache.publicKeys(r).map((k) => k.kid)).toEqual(['good']);
  });

  it('forgets the set when the client points to another jwks_uri', async () => {
    const cache = new ClientKeyCache({ secretOf: () => undefined, fetchJwks: async () => ({ status: 200, body: { keys: [publicJwk('a')] }, freshUntil: Number.MAX_SAFE_INTEGER }) });
    await cache.refresh(record({ jwks_uri: 'https://rp.example/one' }));
    const moved = record({ jwks_uri: 'https://rp.example/two' });
    expect(cache.stale(moved)).toBe(true);
    expect(cache.publicKeys(moved)).toEqual([]);
  });
});

describe('freshUntilOf', () => {
  const headers = (h: Record<string, string>) => new Headers(h);
  it('is at least 60 s, longer by max-age or Expires', () => {
    expect(freshUntilOf(headers({}), 100)).toBe(160);
    expect(freshUntilOf(headers({ 'cache-control': 'public, max-age=600' }), 100)).toBe(700);
    expect(freshUntilOf(headers({ 'cache-control': 'max-age=10' }), 100)).toBe(160);
    expect(freshUntilOf(headers({ expires: new Date(1_000_000 * 1000).toUTCString() }), 100)).toBe(1_000_000);
  });
});

describe('importJwks', () => {
  it('imports public RSA/EC/OKP keys and skips symmetric, private and broken ones', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keys = importJwks({
      keys: [
        { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'r', alg: 'RS256' },
        rsa.privateKey.export({ format: 'jwk' }),
        { kty: 'oct', k: 'c2VjcmV0' },
        { kty: 'EC', crv: 'P-256', x: 'broken', y: 'broken' },
        publicJwk('e'),
      ],
    });
    expect(keys.map((k) => [k.kty, k.kid])).toEqual([
      ['RSA', 'r'],
      ['EC', 'e'],
    ]);
    expect(() => importJwks({ nokeys: true })).toThrow();
  });
});
