/**
 * findWithGrant's contract (src/oidc/grant-reads.ts, OidcPayloadRepository.findWithGrant), run
 * against each backend by the storage contract and the Redis repository's tests: the token as find
 * returns it, and the grant as find returns it, whether the store read both at once (PostgreSQL,
 * Redis) or the grant is read after the token (SQLite).
 */
import { expect } from 'vitest';
import { findWithGrant, grantFor } from '../../src/oidc/grant-reads.js';
import type { OidcPayloadRepository } from '../../src/storage/types.js';

const nowSec = () => Math.floor(Date.now() / 1000);

/** `reads`: whether this backend reads the grant with the token (it must then offer findWithGrant). */
export async function checkFindWithGrant(repo: OidcPayloadRepository, tenant: string, other: string, reads: boolean): Promise<void> {
  expect(typeof repo.findWithGrant === 'function').toBe(reads);
  const live = nowSec() + 60;
  await repo.upsert(tenant, 'Grant', 'wg-1', { jti: 'wg-1', accountId: 'acc', clientId: 'app' }, live);
  await repo.upsert(tenant, 'Grant', 'wg-old', { jti: 'wg-old' }, nowSec() - 1);
  await repo.upsert(other, 'Grant', 'wg-other', { jti: 'wg-other' }, live);
  await repo.upsert(tenant, 'AccessToken', 'wt-1', { grantId: 'wg-1', scope: 'openid' }, live);
  await repo.upsert(tenant, 'RefreshToken', 'wt-consumed', { grantId: 'wg-1' }, live);
  await repo.consume(tenant, 'RefreshToken', 'wt-consumed');
  await repo.upsert(tenant, 'AccessToken', 'wt-gone', { grantId: 'wg-none' }, live);
  await repo.upsert(tenant, 'AccessToken', 'wt-old', { grantId: 'wg-old' }, live);
  // A token naming another tenant's grant id: that tenant's grant is never read.
  await repo.upsert(tenant, 'AccessToken', 'wt-other', { grantId: 'wg-other' }, live);
  await repo.upsert(tenant, 'AccessToken', 'wt-bare', { scope: 'openid' }, live);
  await repo.upsert(tenant, 'AccessToken', 'wt-dead', { grantId: 'wg-1' }, nowSec() - 1);

  const grant = await repo.find(tenant, 'Grant', 'wg-1');
  expect(grant?.payload).toEqual({ jti: 'wg-1', accountId: 'acc', clientId: 'app' });
  const one = await findWithGrant(repo, tenant, 'AccessToken', 'wt-1');
  expect(one?.row).toEqual(await repo.find(tenant, 'AccessToken', 'wt-1'));
  expect(one?.grant).toEqual(reads ? { id: 'wg-1', row: grant } : undefined);
  // The grant as the token path takes it: the one read with the token, or read now.
  expect(await grantFor(one!, 'wg-1', () => repo.find(tenant, 'Grant', 'wg-1'))).toEqual(grant);
  // Asked for another grant than the one read with it, grantFor reads that one.
  let readAnother = false;
  await grantFor(one!, 'wg-old', () => ((readAnother = true), repo.find(tenant, 'Grant', 'wg-old')));
  expect(readAnother).toBe(true);

  const consumed = await findWithGrant(repo, tenant, 'RefreshToken', 'wt-consumed');
  expect(consumed?.row.consumed).toBe(true);
  expect(consumed?.grant).toEqual(reads ? { id: 'wg-1', row: grant } : undefined);
  for (const [id, grantId] of [['wt-gone', 'wg-none'], ['wt-old', 'wg-old'], ['wt-other', 'wg-other']] as const) {
    const found = await findWithGrant(repo, tenant, 'AccessToken', id);
    expect(found?.row.payload.grantId).toBe(grantId);
    expect(found?.grant).toEqual(reads ? { id: grantId, row: undefined } : undefined);
  }
  expect((await findWithGrant(repo, tenant, 'AccessToken', 'wt-bare'))?.grant).toBeUndefined();
  expect(await findWithGrant(repo, tenant, 'AccessToken', 'wt-dead')).toBeUndefined();
  expect(await findWithGrant(repo, tenant, 'AccessToken', 'wt-none')).toBeUndefined();
  expect(await findWithGrant(repo, other, 'AccessToken', 'wt-1')).toBeUndefined();
  expect(await findWithGrant(repo, tenant, 'Grant', 'wt-1')).toBeUndefined();
}
