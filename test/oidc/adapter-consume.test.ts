/**
 * The adapter's consume (src/oidc/adapter.ts) when two requests spend one artefact at the same
 * moment: the store decides (OidcPayloadRepository.consume), and the loser fails as a replay would.
 * A grant's artefact: the grant revoked (its artefacts and the Grant) and invalid_grant; a pushed
 * authorization request: invalid_request_uri. Against the real SQLite store.
 */
import { errors } from 'oidc-provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { adapterFactory } from '../../src/oidc/adapter.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

let t: TempStorage;
beforeEach(() => {
  t = openTempStorage();
});
afterEach(async () => t.close());

const inAMinute = () => Math.floor(Date.now() / 1000) + 60;
const adapter = (model: string) => new (adapterFactory(t.storage.oidc, 'default', async () => undefined))(model);

describe('the adapter\'s consume, twice at the same moment', () => {
  it('a refresh token: one consumes, the other gets invalid_grant and the grant is revoked', async () => {
    const repo = t.storage.oidc;
    await repo.upsert('default', 'Grant', 'g1', { jti: 'g1', kind: 'Grant' }, inAMinute());
    await repo.upsert('default', 'RefreshToken', 'rt1', { jti: 'rt1', grantId: 'g1' }, inAMinute());
    await repo.upsert('default', 'AccessToken', 'at1', { jti: 'at1', grantId: 'g1' }, inAMinute());
    const tokens = adapter('RefreshToken');
    const outcomes = await Promise.allSettled([tokens.consume('rt1'), tokens.consume('rt1')]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const lost = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(errors.InvalidGrant);
    expect(await repo.find('default', 'Grant', 'g1')).toBeUndefined();
    expect(await repo.find('default', 'AccessToken', 'at1')).toBeUndefined();
    expect(await repo.find('default', 'RefreshToken', 'rt1')).toBeUndefined();
  });

  it('a pushed authorization request: one consumes, the other gets invalid_request_uri', async () => {
    await t.storage.oidc.upsert('default', 'PushedAuthorizationRequest', 'par1', { jti: 'par1' }, inAMinute());
    const requests = adapter('PushedAuthorizationRequest');
    const outcomes = await Promise.allSettled([requests.consume('par1'), requests.consume('par1')]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(errors.InvalidRequestUri);
  });

  it('an artefact consumed once answers as before', async () => {
    await t.storage.oidc.upsert('default', 'AuthorizationCode', 'c1', { jti: 'c1', grantId: 'g2' }, inAMinute());
    await expect(adapter('AuthorizationCode').consume('c1')).resolves.toBeUndefined();
    expect((await t.storage.oidc.find('default', 'AuthorizationCode', 'c1'))?.consumed).toBe(true);
  });
});
