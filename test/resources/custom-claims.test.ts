/**
 * Custom claim definitions stored before a name was reserved: a definition named like an
 * Object.prototype member (`constructor` made oidc-provider refuse a resource token's extra claims
 * as not a plain object: a 500 on every resource token of the tenant) is left out when loaded, and
 * the tenant's other claims are kept.
 */
import { describe, expect, it } from 'vitest';
import { CUSTOM_CLAIMS_DOCUMENT, customClaimValues, loadCustomClaims } from '../../src/resources/custom-claims.js';
import type { TenantConfigRepository } from '../../src/storage/types.js';

const repoWith = (doc: unknown): TenantConfigRepository =>
  ({ get: async () => ({ [CUSTOM_CLAIMS_DOCUMENT]: doc as Record<string, unknown> }) }) as unknown as TenantConfigRepository;

describe('loadCustomClaims', () => {
  it('leaves out a stored definition named like a prototype member and keeps the others', async () => {
    const claims = await loadCustomClaims(repoWith({ claims: [{ name: 'constructor', value: 'c' }, { name: 'tier', value: 'gold' }, { name: 'toString', value: 't' }] }), 'default');
    expect(claims).toEqual([{ name: 'tier', value: 'gold' }]);
    const values = customClaimValues(claims, { username: null } as never);
    expect(Object.getPrototypeOf(values)).toBe(Object.prototype);
    expect(values.constructor).toBe(Object);
    expect(values).toEqual({ tier: 'gold' });
  });

  it('still drops a document that is not claims at all', async () => {
    expect(await loadCustomClaims(repoWith({ claims: 'nope' }), 'default')).toEqual([]);
    expect(await loadCustomClaims(repoWith({ claims: [{ name: 'iss', value: 'evil' }] }), 'default')).toEqual([]);
  });
});
