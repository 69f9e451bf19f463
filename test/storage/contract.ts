/**
 * The storage contract: the behaviours every backend must share, written against the Storage
 * interface only (ported from sqlite.test.ts, users.test.ts and registration-tokens.test.ts).
 * sqlite-contract.test.ts and postgresql.test.ts run it, so the PostgreSQL backend matches the
 * SQLite reference exactly: pagination order and cursors, LIKE escaping, consumeUse atomicity,
 * audit statistics, tenant isolation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UniqueViolation } from '../../src/storage/errors.js';
import type { AccountTokenRecord, ClientRecord, PageRequest, RegistrationTokenRecord, ResourceRecord, Storage, UserRecord, WebauthnCredentialRecord } from '../../src/storage/types.js';
import { at, auditEntry, clientRecord, keyRecord } from '../helpers/storage.js';
import { checkFindWithGrant } from '../helpers/with-grant.js';

export interface ContractBackend {
  storage: Storage;
  /** A second storage on the same database: another connection, as another instance would have. */
  openAnother(): Promise<Storage>;
  /** What the interface does not expose, read from the database directly. */
  probe: {
    /** oidc_payloads rows of every tenant with expires_at <= nowSec. */
    expiredPayloads(nowSec: number): Promise<number>;
    /** Token hashes of one tenant's account_tokens rows, expired or not, sorted. */
    accountTokenHashes(tenant: string): Promise<string[]>;
    /** Stored login_attempts times of one key, oldest first. */
    loginAttemptTimes(tenant: string, key: string): Promise<string[]>;
  };
  close(): Promise<void>;
}

const page = (over: Partial<PageRequest> = {}): PageRequest => ({ limit: 25, include_count: false, ...over });
const nowSec = () => Math.floor(Date.now() / 1000);
const HOUR = 3600_000;
const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();

let userSeq = 0;
function user(over: Partial<UserRecord> = {}): UserRecord {
  userSeq++;
  // Distinct, increasing created_at so the paging order is known.
  const created = new Date(Date.UTC(2024, 0, 1, 0, 0, userSeq)).toISOString();
  return {
    id: `u-${String(userSeq).padStart(3, '0')}`,
    email: `user${userSeq}@example.com`,
    email_verified: false,
    username: null,
    given_name: null,
    family_name: null,
    name: null,
    nickname: null,
    role: 'user',
    account_enabled: true,
    locked: false,
    locked_until: null,
    auth_provider: 'local',
    password_hash: '$argon2id$fake',
    mfa_enabled: false,
    mfa_methods: [],
    mfa_secret_sealed: null,
    mfa_recovery_sealed: null,
    deleted_at: null,
    created_at: created,
    updated_at: created,
    last_login_at: null,
    ...over,
  };
}

function token(over: Partial<RegistrationTokenRecord> = {}): RegistrationTokenRecord {
  const jti = over.jti ?? `jti-${Math.random().toString(36).slice(2)}`;
  return {
    jti,
    token_hash: `hash-${jti}`,
    expires_at: iso(HOUR),
    max_usage_count: 2,
    current_usage_count: 0,
    policies: ['general-policy'],
    note: null,
    created_at: iso(),
    revoked_at: null,
    creator_scopes: null,
    ...over,
  };
}

export function describeStorageContract(name: string, open: () => Promise<ContractBackend>): void {
  describe(`storage contract: ${name}`, () => {
    let backend: ContractBackend;
    let s: Storage;
    beforeAll(async () => {
      backend = await open();
      s = backend.storage;
    });
    afterAll(async () => backend?.close());

    describe('clients', () => {
      const tenant = 'clients-t';
      const other = 'clients-u';

      it('creates and reads back every column', async () => {
        const r = clientRecord('c1', {
          secret_sealed: 'v1.x.y.z',
          secret_generation: 2,
          active: false,
          created_at: at(1),
          updated_at: at(2),
          metadata: { description: 'desc', tags: ['a', 'b'], scope: 'svc:clients:read', redirect_uris: ['https://app.example/cb'], jwks: { keys: [{ kty: 'EC', crv: 'P-256' }] } },
        });
        await s.clients.create(tenant, r);
        expect(await s.clients.get(tenant, 'c1')).toEqual(r);
        expect(await s.clients.get(tenant, 'unknown')).toBeUndefined();
      });

      it('refuses a duplicate client_id within a tenant but allows it in another tenant', async () => {
        await expect(s.clients.create(tenant, clientRecord('c1'))).rejects.toThrow();
        await s.clients.create(other, clientRecord('c1', { metadata: { client_name: 'Other tenant c1' } }));
        expect((await s.clients.get(other, 'c1'))?.metadata.client_name).toBe('Other tenant c1');
        expect((await s.clients.get(tenant, 'c1'))?.metadata.client_name).toBe('Client c1');
      });

      it('updates only the given columns and bumps updated_at', async () => {
        const before = (await s.clients.get(tenant, 'c1'))!;
        const updated = await s.clients.update(tenant, 'c1', { active: true, metadata: { ...before.metadata, client_name: 'Renamed', description: undefined } });
        expect(updated!.active).toBe(true);
        expect(updated!.metadata.client_name).toBe('Renamed');
        expect(updated!.metadata.description).toBeUndefined();
        expect(updated!.secret_hash).toBe(before.secret_hash);
        expect(updated!.secret_sealed).toBe(before.secret_sealed);
        expect(updated!.secret_generation).toBe(2);
        expect(updated!.created_at).toBe(before.created_at);
        expect(updated!.updated_at > before.updated_at).toBe(true);

        const secret = await s.clients.update(tenant, 'c1', { secret_hash: null, secret_sealed: null, bump_generation: true });
        expect(secret).toMatchObject({ secret_hash: null, secret_sealed: null, secret_generation: 3, active: true });
        expect(secret!.metadata.client_name).toBe('Renamed');
        expect(await s.clients.update(tenant, 'nope', { active: false })).toBeUndefined();

        // Concurrent secret regenerations each count: no two tokens epochs collapse into one.
        await Promise.all(Array.from({ length: 5 }, () => s.clients.update(tenant, 'c1', { bump_generation: true })));
        expect((await s.clients.get(tenant, 'c1'))!.secret_generation).toBe(8);
      });

      it('keeps the search columns in step with the metadata', async () => {
        expect((await s.clients.list(tenant, { q: 'Renamed' }, page())).items.map((c) => c.client_id)).toEqual(['c1']);
        expect((await s.clients.list(tenant, { q: 'Client c1' }, page())).items).toEqual([]);
        expect((await s.clients.list(tenant, { q: 'desc' }, page())).items).toEqual([]); // description cleared
      });

      it('records usage: adds counts and keeps the latest last_used_at', async () => {
        await s.clients.recordUsageBatch([{ tenant, clientId: 'c1', tokens: 3, lastUsedAt: at(100) }]);
        await s.clients.recordUsageBatch([{ tenant, clientId: 'c1', tokens: 2, lastUsedAt: at(50) }]); // an older batch does not move last_used_at back
        const r = (await s.clients.get(tenant, 'c1'))!;
        expect(r.tokens_issued).toBe(5);
        expect(r.last_used_at).toBe(at(100));
        await s.clients.recordUsageBatch([{ tenant, clientId: 'unknown', tokens: 1, lastUsedAt: at(1) }]); // no row, no error
      });

      it('records usage of many tenants in one batch, each only in its own tenant, values escaped', async () => {
        const other = `${tenant}-usage`;
        await s.clients.create(tenant, clientRecord("it's"));
        await s.clients.create(other, clientRecord('c-other'));
        await s.clients.create(other, clientRecord("it's"));
        await s.clients.recordUsageBatch([
          { tenant, clientId: "it's", tokens: 4, lastUsedAt: at(200) },
          { tenant: other, clientId: 'c-other', tokens: 7, lastUsedAt: at(300) },
          // A client id of another tenant, and an injection attempt: no row, no error, nothing else touched.
          { tenant, clientId: 'c-other', tokens: 100, lastUsedAt: at(999) },
          { tenant, clientId: "x' OR '1'='1", tokens: 100, lastUsedAt: at(999) },
        ]);
        expect((await s.clients.get(tenant, "it's"))!.tokens_issued).toBe(4);
        expect((await s.clients.get(tenant, "it's"))!.last_used_at).toBe(at(200));
        expect((await s.clients.get(other, 'c-other'))!.tokens_issued).toBe(7);
        expect((await s.clients.get(other, "it's"))!.tokens_issued).toBe(0);
        await s.clients.recordUsageBatch([]);
      });

      it('deletes', async () => {
        await s.clients.create(tenant, clientRecord('to-delete'));
        expect(await s.clients.delete(tenant, 'to-delete')).toBe(true);
        expect(await s.clients.get(tenant, 'to-delete')).toBeUndefined();
        expect(await s.clients.delete(tenant, 'to-delete')).toBe(false);
      });

      describe('list', () => {
        const lt = 'list-t';
        const ids: string[] = [];
        beforeAll(async () => {
          // 12 clients: every third spa, every fourth native, every fifth inactive; two share a timestamp.
          for (let i = 0; i < 12; i++) {
            const id = `L${String(i).padStart(2, '0')}`;
            ids.push(id);
            const type = i % 3 === 0 ? 'spa' : i % 4 === 0 ? 'native' : 'web';
            await s.clients.create(
              lt,
              clientRecord(id, {
                created_at: at(i === 7 ? 6 : i),
                active: i % 5 !== 0,
                metadata: { application_type: type, client_name: `App ${i} ${i === 2 ? '100%_done' : ''}`, description: i === 4 ? 'Searchable Text' : undefined },
              }),
            );
          }
        });

        it('orders by created_at then client_id', async () => {
          const res = await s.clients.list(lt, {}, page({ include_count: true }));
          expect(res.items.map((c) => c.client_id)).toEqual(ids);
          expect(res.has_more).toBe(false);
          expect(res.total_count).toBe(12);
          expect(await s.clients.count(lt)).toBe(12);
        });

        it('pages with a cursor of the last row, counting the whole filtered set on each page', async () => {
          const seen: string[] = [];
          let after: PageRequest['after'];
          let pages = 0;
          for (;;) {
            const res = await s.clients.list(lt, {}, page({ limit: 5, after, include_count: true }));
            pages++;
            expect(res.total_count).toBe(12);
            seen.push(...res.items.map((c) => c.client_id));
            if (!res.has_more) break;
            const last = res.items[res.items.length - 1]!;
            after = { created_at: last.created_at, id: last.client_id };
          }
          expect(pages).toBe(3);
          expect(seen).toEqual(ids);
        });

        it('does not report more when the page is exactly full', async () => {
          const res = await s.clients.list(lt, {}, page({ limit: 12 }));
          expect(res.items).toHaveLength(12);
          expect(res.has_more).toBe(false);
          expect(res.total_count).toBeUndefined();
        });

        it('filters by application_type and active, alone and together', async () => {
          const spa = await s.clients.list(lt, { application_type: 'spa' }, page({ include_count: true }));
          expect(spa.items.map((c) => c.client_id)).toEqual(['L00', 'L03', 'L06', 'L09']);
          expect(spa.total_count).toBe(4);
          const inactive = await s.clients.list(lt, { active: false }, page());
          expect(inactive.items.map((c) => c.client_id)).toEqual(['L00', 'L05', 'L10']);
          const activeNative = await s.clients.list(lt, { application_type: 'native', active: true }, page());
          expect(activeNative.items.map((c) => c.client_id)).toEqual(['L04', 'L08']);
          const filteredPage = await s.clients.list(lt, { active: true }, page({ limit: 2, include_count: true }));
          expect(filteredPage.items.map((c) => c.client_id)).toEqual(['L01', 'L02']);
          expect(filteredPage.has_more).toBe(true);
          expect(filteredPage.total_count).toBe(9);
        });

        it('searches name, id and description case-insensitively, with LIKE wildcards taken literally', async () => {
          expect((await s.clients.list(lt, { q: 'searchable text' }, page())).items.map((c) => c.client_id)).toEqual(['L04']);
          expect((await s.clients.list(lt, { q: 'l11' }, page())).items.map((c) => c.client_id)).toEqual(['L11']);
          expect((await s.clients.list(lt, { q: '%' }, page())).items.map((c) => c.client_id)).toEqual(['L02']);
          expect((await s.clients.list(lt, { q: '0%_d' }, page())).items.map((c) => c.client_id)).toEqual(['L02']);
          expect((await s.clients.list(lt, { q: '_' }, page())).items.map((c) => c.client_id)).toEqual(['L02']);
          expect((await s.clients.list(lt, { q: "' OR '1'='1" }, page())).items).toEqual([]);
          expect((await s.clients.list(lt, { q: '\\' }, page())).items).toEqual([]);
        });

        it('matches every word of q in any order and any of the columns, and only records holding every word', async () => {
          // L04: client_name "App 4 ", description "Searchable Text".
          expect((await s.clients.list(lt, { q: 'Text Searchable' }, page())).items.map((c) => c.client_id)).toEqual(['L04']);
          expect((await s.clients.list(lt, { q: '  searchable   app ' }, page())).items.map((c) => c.client_id)).toEqual(['L04']);
          expect((await s.clients.list(lt, { q: 'searchable L04' }, page())).items.map((c) => c.client_id)).toEqual(['L04']);
          expect((await s.clients.list(lt, { q: 'searchable L05' }, page())).items).toEqual([]);
          expect((await s.clients.list(lt, { q: 'text nowhere' }, page())).items).toEqual([]);
          // White space alone is a search for white space, not for everything.
          expect((await s.clients.list(lt, { q: '   ' }, page())).items).toEqual([]);
        });
      });

      it('orders ids bytewise (upper case before lower case), whatever the database locale', async () => {
        const bt = 'bytes-t';
        for (const id of ['b', 'B', 'a', 'A', '_x', 'Z']) await s.clients.create(bt, clientRecord(id, { created_at: at(1) }));
        expect((await s.clients.list(bt, {}, page())).items.map((c) => c.client_id)).toEqual(['A', 'B', 'Z', '_x', 'a', 'b']);
      });

      it('isolates tenants on every method', async () => {
        const a = 'iso-a';
        const b = 'iso-b';
        await s.clients.create(a, clientRecord('shared-name', { metadata: { client_name: 'Only in A', description: 'findme' } }));
        await s.clients.create(a, clientRecord('a-only', { metadata: { client_name: 'Also A' } }));
        const snapshot = await s.clients.get(a, 'a-only');

        expect(await s.clients.get(b, 'a-only')).toBeUndefined();
        expect(await s.clients.list(b, {}, page({ include_count: true }))).toEqual({ items: [], has_more: false, total_count: 0 });
        expect((await s.clients.list(b, { q: 'findme' }, page())).items).toEqual([]);
        expect(await s.clients.count(b)).toBe(0);
        expect(await s.clients.update(b, 'a-only', { active: false, metadata: { ...snapshot!.metadata, client_name: 'hijacked' } })).toBeUndefined();
        expect(await s.clients.delete(b, 'a-only')).toBe(false);
        await s.clients.recordUsageBatch([{ tenant: b, clientId: 'a-only', tokens: 99, lastUsedAt: at(999) }]);

        expect(await s.clients.get(a, 'a-only')).toEqual(snapshot);
        expect(await s.clients.count(a)).toBe(2);
        const first = await s.clients.list(a, {}, page({ limit: 1 }));
        const last = first.items[0] as ClientRecord;
        expect((await s.clients.list(b, {}, page({ after: { created_at: last.created_at, id: last.client_id } }))).items).toEqual([]);
      });
    });

    describe('oidc payloads', () => {
      const ot = 'oidc-t';

      it('upserts and finds by model and id; a second upsert replaces the payload', async () => {
        await s.oidc.upsert(ot, 'Session', 's1', { uid: 'u1', accountId: 'acc' }, nowSec() + 60);
        expect(await s.oidc.find(ot, 'Session', 's1')).toEqual({ payload: { uid: 'u1', accountId: 'acc' }, expires_at: expect.any(Number), consumed: false });
        expect(await s.oidc.find(ot, 'Grant', 's1')).toBeUndefined();
        await s.oidc.upsert(ot, 'Session', 's1', { uid: 'u1', accountId: 'acc2' }, null);
        expect(await s.oidc.find(ot, 'Session', 's1')).toEqual({ payload: { uid: 'u1', accountId: 'acc2' }, expires_at: null, consumed: false });
      });

      it('reads together (readTogether) what it would read alone, and leaves no transaction behind', async () => {
        await s.oidc.upsert(ot, 'Grant', 'g-together', { jti: 'g-together' }, nowSec() + 60);
        const [grant, missing] = await s.readTogether(() => Promise.all([s.oidc.find(ot, 'Grant', 'g-together'), s.oidc.find(ot, 'Grant', 'g-none')]));
        expect(grant?.payload).toEqual({ jti: 'g-together' });
        expect(missing).toBeUndefined();
        await s.oidc.upsert(ot, 'Grant', 'g-together', { jti: 'g-together', after: true }, nowSec() + 60);
        expect((await s.oidc.find(ot, 'Grant', 'g-together'))?.payload).toEqual({ jti: 'g-together', after: true });
      });

      it('keeps nested payloads and numbers exactly', async () => {
        const payload = { kind: 'Grant', exp: 1767225600, nested: { list: [1, 'two', null, { deep: true }] }, empty: {}, unicode: 'é✓' };
        await s.oidc.upsert(ot, 'Grant', 'g-shape', payload, nowSec() + 60);
        expect((await s.oidc.find(ot, 'Grant', 'g-shape'))?.payload).toEqual(payload);
      });

      it('hides expired rows from every reader', async () => {
        await s.oidc.upsert(ot, 'Interaction', 'old', { uid: 'old-uid', userCode: 'OLD-CODE' }, nowSec() - 1);
        expect(await s.oidc.find(ot, 'Interaction', 'old')).toBeUndefined();
        expect(await s.oidc.findByUid(ot, 'Interaction', 'old-uid')).toBeUndefined();
        expect(await s.oidc.findByUserCode(ot, 'Interaction', 'OLD-CODE')).toBeUndefined();
        await s.oidc.upsert(ot, 'Session', 'old-session', { uid: 'old-session-uid' }, nowSec() - 1);
        expect(await s.oidc.findByUid(ot, 'Session', 'old-session-uid')).toBeUndefined();
        expect((await s.oidc.listByModel(ot, 'Session')).map((r) => r.id)).not.toContain('old-session');
      });

      it('consumes, and a later upsert keeps the artefact consumed', async () => {
        await s.oidc.upsert(ot, 'AuthorizationCode', 'code1', { grantId: 'g1' }, nowSec() + 60);
        await s.oidc.consume(ot, 'AuthorizationCode', 'code1');
        expect((await s.oidc.find(ot, 'AuthorizationCode', 'code1'))?.consumed).toBe(true);
        await s.oidc.upsert(ot, 'AuthorizationCode', 'code1', { grantId: 'g1', extra: 1 }, nowSec() + 60);
        expect((await s.oidc.find(ot, 'AuthorizationCode', 'code1'))?.consumed).toBe(true);
      });

      it('consumes once: true for the consume that did it, false after and for a row that is not there', async () => {
        await s.oidc.upsert(ot, 'RefreshToken', 'rt-once', { grantId: 'g1' }, nowSec() + 60);
        expect(await s.oidc.consume(ot, 'RefreshToken', 'rt-once')).toBe(true);
        expect(await s.oidc.consume(ot, 'RefreshToken', 'rt-once')).toBe(false);
        expect(await s.oidc.consume(ot, 'RefreshToken', 'rt-absent')).toBe(false);
        expect(await s.oidc.find(ot, 'RefreshToken', 'rt-absent')).toBeUndefined();
      });

      it('decides concurrent consumes of one row: exactly one gets true', async () => {
        await s.oidc.upsert(ot, 'AuthorizationCode', 'code-race', { grantId: 'g1' }, nowSec() + 60);
        const results = await Promise.all(Array.from({ length: 8 }, () => s.oidc.consume(ot, 'AuthorizationCode', 'code-race')));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect((await s.oidc.find(ot, 'AuthorizationCode', 'code-race'))?.consumed).toBe(true);
      });

      it('consumeAndUpsert: the consume and the new rows together; a spent token writes nothing; of concurrent calls one wins', async () => {
        const step = s.oidc.consumeAndUpsert!.bind(s.oidc);
        await s.oidc.upsert(ot, 'RefreshToken', 'rt-step', { grantId: 'g-step' }, nowSec() + 60);
        const next = (id: string) => [
          { model: 'RefreshToken', id, payload: { grantId: 'g-step', uid: `uid-${id}` }, expiresAt: nowSec() + 60 },
          { model: 'AccessToken', id: `at-${id}`, payload: { grantId: 'g-step' }, expiresAt: nowSec() + 60 },
        ];
        expect(await step(ot, { model: 'RefreshToken', id: 'rt-step' }, next('rt-step-2'))).toBe(true);
        expect((await s.oidc.find(ot, 'RefreshToken', 'rt-step'))?.consumed).toBe(true);
        expect((await s.oidc.find(ot, 'RefreshToken', 'rt-step-2'))?.payload).toEqual({ grantId: 'g-step', uid: 'uid-rt-step-2' });
        expect((await s.oidc.findByUid(ot, 'RefreshToken', 'uid-rt-step-2'))?.payload).toEqual({ grantId: 'g-step', uid: 'uid-rt-step-2' });
        expect(await s.oidc.find(ot, 'AccessToken', 'at-rt-step-2')).toMatchObject({ consumed: false });
        // Presented again: nothing is written.
        expect(await step(ot, { model: 'RefreshToken', id: 'rt-step' }, next('rt-step-3'))).toBe(false);
        expect(await s.oidc.find(ot, 'RefreshToken', 'rt-step-3')).toBeUndefined();
        expect(await s.oidc.find(ot, 'AccessToken', 'at-rt-step-3')).toBeUndefined();
        expect(await step(ot, { model: 'RefreshToken', id: 'rt-absent-step' }, next('rt-step-4'))).toBe(false);
        expect(await s.oidc.find(ot, 'RefreshToken', 'rt-step-4')).toBeUndefined();
        // Eight at once: one consumes, only its rows exist.
        const results = await Promise.all(Array.from({ length: 8 }, (_, i) => step(ot, { model: 'RefreshToken', id: 'rt-step-2' }, next(`rt-race-${i}`))));
        expect(results.filter(Boolean)).toHaveLength(1);
        const found = await Promise.all(results.map((_, i) => s.oidc.find(ot, 'RefreshToken', `rt-race-${i}`)));
        expect(found.map((r) => r !== undefined)).toEqual(results);
      });

      it('upsertMany writes every row as upsert would', async () => {
        await s.oidc.upsertMany!(ot, [
          { model: 'AuthorizationCode', id: 'many-code', payload: { grantId: 'g-many' }, expiresAt: nowSec() + 60 },
          { model: 'Session', id: 'many-session', payload: { uid: 'many-uid', accountId: 'acc' }, expiresAt: nowSec() + 60 },
        ]);
        expect((await s.oidc.find(ot, 'AuthorizationCode', 'many-code'))?.payload).toEqual({ grantId: 'g-many' });
        expect((await s.oidc.findByUid(ot, 'Session', 'many-uid'))?.payload).toEqual({ uid: 'many-uid', accountId: 'acc' });
      });

      it('finds by uid and by user code within the model', async () => {
        await s.oidc.upsert(ot, 'Session', 's2', { uid: 'uid-2' }, nowSec() + 60);
        await s.oidc.upsert(ot, 'DeviceCode', 'd1', { userCode: 'ABCD-EFGH', grantId: 'g2' }, nowSec() + 60);
        expect((await s.oidc.findByUid(ot, 'Session', 'uid-2'))?.payload).toEqual({ uid: 'uid-2' });
        expect(await s.oidc.findByUid(ot, 'Grant', 'uid-2')).toBeUndefined();
        expect((await s.oidc.findByUserCode(ot, 'DeviceCode', 'ABCD-EFGH'))?.payload).toEqual({ userCode: 'ABCD-EFGH', grantId: 'g2' });
        expect(await s.oidc.findByUserCode(ot, 'DeviceCode', 'abcd-efgh')).toBeUndefined();
      });

      it('revokes every artefact of a grant and nothing else', async () => {
        await s.oidc.upsert(ot, 'AccessToken', 'at1', { grantId: 'gx' }, nowSec() + 60);
        await s.oidc.upsert(ot, 'RefreshToken', 'rt1', { grantId: 'gx' }, nowSec() + 60);
        await s.oidc.upsert(ot, 'AccessToken', 'at2', { grantId: 'gy' }, nowSec() + 60);
        await s.oidc.upsert('oidc-u', 'AccessToken', 'at1', { grantId: 'gx' }, nowSec() + 60);
        await s.oidc.revokeByGrantId(ot, 'gx');
        expect(await s.oidc.find(ot, 'AccessToken', 'at1')).toBeUndefined();
        expect(await s.oidc.find(ot, 'RefreshToken', 'rt1')).toBeUndefined();
        expect(await s.oidc.find(ot, 'AccessToken', 'at2')).toBeDefined();
        expect(await s.oidc.find('oidc-u', 'AccessToken', 'at1')).toBeDefined();
      });

      it('finds a token with the grant it names (findWithGrant): in one read on PostgreSQL, after it on SQLite', async () => {
        await checkFindWithGrant(s.oidc, 'oidc-with-grant', 'oidc-with-grant-2', s.kind === 'postgresql');
      });

      it('destroys one row, saying whether this call removed it (of concurrent destroys exactly one)', async () => {
        expect(await s.oidc.destroy(ot, 'AccessToken', 'at2')).toBe(true);
        expect(await s.oidc.find(ot, 'AccessToken', 'at2')).toBeUndefined();
        expect(await s.oidc.destroy(ot, 'AccessToken', 'at2')).toBe(false);
        expect(await s.oidc.destroy(ot, 'AccessToken', 'never-stored')).toBe(false);
        await s.oidc.upsert(ot, 'Session', 'raced', { accountId: 'x' }, nowSec() + 60);
        const results = await Promise.all([1, 2, 3, 4].map(() => s.oidc.destroy(ot, 'Session', 'raced')));
        expect(results.filter(Boolean)).toHaveLength(1);
      });

      it('lists sessions by account and by authorised client', async () => {
        const st = 'oidc-sessions';
        await s.oidc.upsert(st, 'Session', 'sa', { accountId: 'alice', authorizations: { app1: { sid: 'x' }, app2: {} } }, nowSec() + 60);
        await s.oidc.upsert(st, 'Session', 'sb', { accountId: 'bob', authorizations: { app1: {} } }, nowSec() + 60);
        await s.oidc.upsert(st, 'Session', 'sc', { accountId: 'alice' }, nowSec() + 60);
        await s.oidc.upsert(st, 'Session', 'dead', { accountId: 'alice', authorizations: { app1: {} } }, nowSec() - 1);
        await s.oidc.upsert(st, 'Grant', 'not-a-session', { accountId: 'alice' }, nowSec() + 60);
        const ids = async (f: Parameters<Storage['oidc']['listSessions']>[1]) => (await s.oidc.listSessions(st, f)).map((r) => r.id).sort();
        expect(await ids({})).toEqual(['sa', 'sb', 'sc']);
        expect(await ids({ accountId: 'alice' })).toEqual(['sa', 'sc']);
        expect(await ids({ clientId: 'app1' })).toEqual(['sa', 'sb']);
        expect(await ids({ accountId: 'alice', clientId: 'app2' })).toEqual(['sa']);
        expect(await ids({ accountId: 'nobody' })).toEqual([]);
        expect(await s.oidc.listSessions('oidc-sessions-other', { accountId: 'alice' })).toEqual([]);
      });

      it('lists grant ids by account, by client and both, from the indexes, following changes', async () => {
        const gt = 'oidc-grants';
        await s.oidc.upsert(gt, 'Grant', 'g1', { accountId: 'alice', clientId: 'app1' }, nowSec() + 60);
        await s.oidc.upsert(gt, 'Grant', 'g2', { accountId: 'alice', clientId: 'app2' }, null);
        await s.oidc.upsert(gt, 'Grant', 'g3', { accountId: 'bob', clientId: 'app1' }, nowSec() + 60);
        await s.oidc.upsert(gt, 'Grant', 'g-dead', { accountId: 'alice', clientId: 'app1' }, nowSec() - 1);
        await s.oidc.upsert(gt, 'Session', 'not-a-grant', { accountId: 'alice', clientId: 'app1', authorizations: { app1: {} } }, nowSec() + 60);
        await s.oidc.upsert('oidc-grants-other', 'Grant', 'g-other', { accountId: 'alice', clientId: 'app1' }, nowSec() + 60);
        const ids = async (f: Parameters<Storage['oidc']['listGrantIds']>[1]) => (await s.oidc.listGrantIds(gt, f)).sort();
        expect(await ids({ accountId: 'alice' })).toEqual(['g1', 'g2']);
        expect(await ids({ clientId: 'app1' })).toEqual(['g1', 'g3']);
        expect(await ids({ accountId: 'alice', clientId: 'app2' })).toEqual(['g2']);
        expect(await ids({ accountId: 'nobody' })).toEqual([]);
        // A re-saved grant moves between index entries; revoked and destroyed grants leave them.
        await s.oidc.upsert(gt, 'Grant', 'g1', { accountId: 'bob', clientId: 'app1' }, nowSec() + 60);
        expect(await ids({ accountId: 'alice' })).toEqual(['g2']);
        expect(await ids({ accountId: 'bob' })).toEqual(['g1', 'g3']);
        await s.oidc.destroy(gt, 'Grant', 'g3');
        await s.oidc.upsert(gt, 'AccessToken', 'at-g2', { grantId: 'g2', accountId: 'alice', clientId: 'app2' }, nowSec() + 60);
        expect(await ids({ clientId: 'app1' })).toEqual(['g1']);
        expect(await ids({ clientId: 'app2' })).toEqual(['g2']);
        expect(await s.oidc.listGrantIds('oidc-grants-other', { accountId: 'bob' })).toEqual([]);
        // Counted without reading them: g1 and g2 live (g3 destroyed, g-dead expired), per tenant.
        expect(await s.oidc.countLive(gt, 'Grant')).toBe(2);
        expect(await s.oidc.countLive('oidc-grants-other', 'Grant')).toBe(1);
        expect(await s.oidc.countLive('oidc-grants-none', 'Grant')).toBe(0);
      });

      it('lists unexpired rows of a model and sweeps expired ones of every tenant', async () => {
        const lt = 'oidc-list';
        await s.oidc.upsert(lt, 'Grant', 'g-live', { clientId: 'c' }, nowSec() + 60);
        await s.oidc.upsert(lt, 'Grant', 'g-forever', { clientId: 'c' }, null);
        await s.oidc.upsert(lt, 'Grant', 'g-dead', { clientId: 'c' }, nowSec() - 5);
        await s.oidc.upsert('oidc-list-2', 'Grant', 'g-dead-2', {}, nowSec() - 5);
        expect((await s.oidc.listByModel(lt, 'Grant')).map((r) => r.id).sort()).toEqual(['g-forever', 'g-live']);
        const expiredBefore = await backend.probe.expiredPayloads(nowSec());
        expect(expiredBefore).toBeGreaterThanOrEqual(3); // g-dead, g-dead-2, 'old' interaction
        expect(await s.oidc.sweepExpired(nowSec())).toBe(expiredBefore);
        expect(await backend.probe.expiredPayloads(nowSec())).toBe(0);
        expect((await s.oidc.listByModel(lt, 'Grant')).map((r) => r.id).sort()).toEqual(['g-forever', 'g-live']);
      });

      it('isolates tenants on every method', async () => {
        const a = 'oidc-iso-a';
        const b = 'oidc-iso-b';
        await s.oidc.upsert(a, 'Session', 'sess', { uid: 'iso-uid', userCode: 'ISO-CODE', grantId: 'iso-grant', accountId: 'iso-acc' }, nowSec() + 60);
        expect(await s.oidc.find(b, 'Session', 'sess')).toBeUndefined();
        expect(await s.oidc.findByUid(b, 'Session', 'iso-uid')).toBeUndefined();
        expect(await s.oidc.findByUserCode(b, 'Session', 'ISO-CODE')).toBeUndefined();
        expect(await s.oidc.listByModel(b, 'Session')).toEqual([]);
        expect(await s.oidc.listSessions(b, { accountId: 'iso-acc' })).toEqual([]);
        await s.oidc.consume(b, 'Session', 'sess');
        await s.oidc.destroy(b, 'Session', 'sess');
        await s.oidc.revokeByGrantId(b, 'iso-grant');
        await s.oidc.upsert(b, 'Session', 'sess', { uid: 'b' }, nowSec() + 60);
        expect(await s.oidc.find(a, 'Session', 'sess')).toEqual({
          payload: { uid: 'iso-uid', userCode: 'ISO-CODE', grantId: 'iso-grant', accountId: 'iso-acc' },
          expires_at: expect.any(Number),
          consumed: false,
        });
        expect((await s.oidc.find(b, 'Session', 'sess'))?.payload).toEqual({ uid: 'b' });
      });
    });

    describe('signing keys', () => {
      const kt = 'keys-t';

      it('inserts several keys at once and lists them newest first with every field', async () => {
        const old = keyRecord('k-old', { created_at: at(1), status: 'expiring', promoted: false, rotated_at: at(5), expires_at: at(10) });
        const fresh = keyRecord('k-new', { created_at: at(5), alg: 'ES256', public_jwk: { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' } });
        await s.keys.insert(kt, [old, fresh]);
        expect(await s.keys.list(kt)).toEqual([fresh, old]);
      });

      it('updates status, flags and timestamps', async () => {
        await s.keys.update(kt, 'k-new', { status: 'expiring', promoted: false, retire_requested: true, rotated_at: at(9), expires_at: at(20) });
        const k = (await s.keys.list(kt)).find((x) => x.kid === 'k-new')!;
        expect(k).toMatchObject({ status: 'expiring', promoted: false, retire_requested: true, rotated_at: at(9), expires_at: at(20) });
        await s.keys.update(kt, 'k-new', {});
        await s.keys.update(kt, 'k-new', { promoted: true, retire_requested: false });
        expect((await s.keys.list(kt)).find((x) => x.kid === 'k-new')).toMatchObject({ promoted: true, retire_requested: false, status: 'expiring' });
      });

      it('refuses an unknown status, inserting none of the batch', async () => {
        await expect(s.keys.insert(kt, [keyRecord('good-in-bad-batch'), keyRecord('bad', { status: 'weird' as never })])).rejects.toThrow();
        expect((await s.keys.list(kt)).map((k) => k.kid)).not.toContain('bad');
        expect((await s.keys.list(kt)).map((k) => k.kid)).not.toContain('good-in-bad-batch');
      });

      it('commits a transaction and rolls one back on error', async () => {
        await s.keys.transaction(kt, async () => {
          await s.keys.insert(kt, [keyRecord('k-tx', { created_at: at(30) })]);
          // Reads inside the transaction see its own writes.
          expect((await s.keys.list(kt)).map((k) => k.kid)).toContain('k-tx');
          await s.keys.update(kt, 'k-old', { status: 'retired' });
        });
        expect((await s.keys.list(kt)).map((k) => [k.kid, k.status])).toEqual([
          ['k-tx', 'active'],
          ['k-new', 'expiring'],
          ['k-old', 'retired'],
        ]);
        await expect(
          s.keys.transaction(kt, async () => {
            await s.keys.insert(kt, [keyRecord('k-rolled-back', { created_at: at(40) })]);
            await s.keys.update(kt, 'k-tx', { status: 'retired' });
            throw new Error('rotation failed');
          }),
        ).rejects.toThrow('rotation failed');
        const after = await s.keys.list(kt);
        expect(after.map((k) => k.kid)).not.toContain('k-rolled-back');
        expect(after.find((k) => k.kid === 'k-tx')?.status).toBe('active');
      });

      it('keeps a transaction invisible to another connection until it commits', async () => {
        const other = await backend.openAnother();
        try {
          let seenInside: string[] = [];
          await s.keys.transaction('keys-vis', async () => {
            await s.keys.insert('keys-vis', [keyRecord('k-pending')]);
            seenInside = (await other.keys.list('keys-vis')).map((k) => k.kid);
          });
          expect(seenInside).toEqual([]);
          // On SQLite a connection reads a turn of the event loop in one read transaction
          // (sqlite/turn-reads.ts): another connection's commit shows from its next turn.
          await new Promise((resolve) => setImmediate(resolve));
          expect((await other.keys.list('keys-vis')).map((k) => k.kid)).toEqual(['k-pending']);
        } finally {
          await other.close();
        }
      });

      it('isolates tenants', async () => {
        expect(await s.keys.list('keys-other')).toEqual([]);
        await s.keys.update('keys-other', 'k-tx', { status: 'retired' });
        expect((await s.keys.list(kt)).find((k) => k.kid === 'k-tx')?.status).toBe('active');
        await s.keys.insert('keys-other', [keyRecord('k-tx')]); // same kid, other tenant
        expect((await s.keys.list('keys-other')).map((k) => k.kid)).toEqual(['k-tx']);
        expect(await s.keys.list(kt)).toHaveLength(3);
      });
    });

    describe('audit', () => {
      const au = 'audit-t';
      beforeAll(async () => {
        const entries = [
          auditEntry('e1', { type: 'login', status: 'success', user_id: 'u1', username: 'alice', timestamp: at(1) }),
          auditEntry('e2', { type: 'failed_login', status: 'failed', username: 'alice', timestamp: at(2) }),
          auditEntry('e3', { type: 'login', status: 'failed', user_id: 'u2', username: 'bob', timestamp: at(3) }),
          auditEntry('e4', { type: 'client.created', client_id: 'c1', details: { client_id: 'c1', nested: { n: 1 } }, timestamp: at(4) }),
          auditEntry('e5', { type: 'login', status: 'success', user_id: 'u1', username: 'alice', timestamp: at(5) }),
          auditEntry('e6', { type: 'client.deleted', client_id: 'c1', status: 'info', timestamp: at(5) }),
          auditEntry('today', { type: 'logout', user_id: 'u3', timestamp: new Date().toISOString() }),
        ];
        for (const e of entries) await s.audit.insert(au, { ...e, tenant_id: au });
        await s.audit.insert('audit-other', auditEntry('x1', { type: 'secret.type', tenant_id: 'audit-other', user_id: 'ux', timestamp: at(1) }));
      });

      it('reads one entry back with its details object', async () => {
        expect(await s.audit.get(au, 'e4')).toEqual(auditEntry('e4', { tenant_id: au, type: 'client.created', client_id: 'c1', details: { client_id: 'c1', nested: { n: 1 } }, timestamp: at(4) }));
        expect(await s.audit.get(au, 'nope')).toBeUndefined();
      });

      it('stores the tenant the call names, not the one the entry carries', async () => {
        await s.audit.insert('audit-named', auditEntry('named', { tenant_id: 'somebody-else' }));
        expect((await s.audit.get('audit-named', 'named'))?.tenant_id).toBe('audit-named');
      });

      it('lists newest first and pages backwards in time', async () => {
        const all = await s.audit.list(au, {}, page({ include_count: true }));
        expect(all.items.map((e) => e.id)).toEqual(['today', 'e6', 'e5', 'e4', 'e3', 'e2', 'e1']);
        expect(all.total_count).toBe(7);
        const seen: string[] = [];
        let after: PageRequest['after'];
        for (;;) {
          const res = await s.audit.list(au, {}, page({ limit: 3, after }));
          seen.push(...res.items.map((e) => e.id));
          if (!res.has_more) break;
          const last = res.items[res.items.length - 1]!;
          after = { created_at: last.timestamp, id: last.id };
        }
        expect(seen).toEqual(all.items.map((e) => e.id));
      });

      it('filters by type, status, username, user_id, client_id and time range', async () => {
        const ids = async (f: Parameters<Storage['audit']['list']>[1]) => (await s.audit.list(au, f, page({ include_count: true }))).items.map((e) => e.id);
        expect(await ids({ type: 'login' })).toEqual(['e5', 'e3', 'e1']);
        expect(await ids({ type: 'login', status: 'failed' })).toEqual(['e3']);
        expect(await ids({ status: 'info' })).toEqual(['e6']);
        expect(await ids({ username: 'alice' })).toEqual(['e5', 'e2', 'e1']);
        expect(await ids({ user_id: 'u1' })).toEqual(['e5', 'e1']);
        expect(await ids({ client_id: 'c1' })).toEqual(['e6', 'e4']);
        expect(await ids({ from: at(2), to: at(4) })).toEqual(['e4', 'e3', 'e2']);
        expect(await ids({ type: "login' OR '1'='1" })).toEqual([]);
        const counted = await s.audit.list(au, { type: 'login' }, page({ limit: 1, include_count: true }));
        expect(counted.total_count).toBe(3);
        expect(counted.has_more).toBe(true);
      });

      it('accepts a range bound at year 0000 (valid ISO 8601, outside some databases\' calendars)', async () => {
        const ids = async (f: Parameters<Storage['audit']['list']>[1]) => (await s.audit.list(au, f, page())).items.map((e) => e.id);
        expect(await ids({ from: '0000-01-01T00:00:00.000Z', to: at(1) })).toEqual(['e1']);
      });

      it('lists distinct types of the tenant, sorted', async () => {
        expect(await s.audit.types(au)).toEqual(['client.created', 'client.deleted', 'failed_login', 'login', 'logout']);
      });

      it('computes statistics', async () => {
        const todayStart = new Date(new Date().setUTCHours(0, 0, 0, 0)).toISOString();
        expect(await s.audit.stats(au, todayStart)).toEqual({
          totalActivities: 7,
          uniqueUsers: 4, // u1, alice (no user_id), u2, u3
          todayCount: 1,
          successfulLogins: 2,
          failedLogins: 2, // a failed_login entry and a failed login
        });
        expect(await s.audit.stats('audit-empty', todayStart)).toEqual({ totalActivities: 0, uniqueUsers: 0, todayCount: 0, successfulLogins: 0, failedLogins: 0 });
      });

      it('isolates tenants', async () => {
        expect(await s.audit.get(au, 'x1')).toBeUndefined();
        expect(await s.audit.get('audit-other', 'e1')).toBeUndefined();
        expect((await s.audit.list('audit-other', {}, page({ include_count: true }))).total_count).toBe(1);
        expect(await s.audit.types('audit-other')).toEqual(['secret.type']);
        expect(await s.audit.types(au)).not.toContain('secret.type');
        expect((await s.audit.list(au, { user_id: 'ux' }, page())).items).toEqual([]);
      });

      it('refuses an unknown status', async () => {
        await expect(s.audit.insert(au, auditEntry('bad', { status: 'meh' as never }))).rejects.toThrow();
      });
    });

    describe('writes with their audit entry (one transaction)', () => {
      const T = 'audited-t';
      const entriesOf = async (type: string) => (await s.audit.list(T, { type }, page())).items;

      it('stores a client write and its entry together, for create, update and delete', async () => {
        await s.clients.create(T, clientRecord('ac1'), auditEntry('a-create', { type: 'client.created', client_id: 'ac1' }));
        expect(await s.clients.get(T, 'ac1')).toBeDefined();
        expect(await s.audit.get(T, 'a-create')).toMatchObject({ type: 'client.created', tenant_id: T });
        await s.clients.update(T, 'ac1', { active: false }, auditEntry('a-update', { type: 'client.deactivated' }));
        expect(await s.audit.get(T, 'a-update')).toMatchObject({ type: 'client.deactivated' });
        expect(await s.clients.delete(T, 'ac1', auditEntry('a-delete', { type: 'client.deleted' }))).toBe(true);
        expect(await s.audit.get(T, 'a-delete')).toMatchObject({ type: 'client.deleted' });
      });

      it('writes a client change made on a read base only while the stored metadata is still that base', async () => {
        await s.clients.create(T, clientRecord('ac-base'));
        const base = (await s.clients.get(T, 'ac-base'))!.metadata;
        const first = await s.clients.update(T, 'ac-base', { metadata: { ...base, description: 'first' } }, auditEntry('base-1', { type: 'client.based' }), base);
        expect(first?.metadata.description).toBe('first');
        // A second writer that read the same base: nothing written, no entry, undefined.
        expect(await s.clients.update(T, 'ac-base', { metadata: { ...base, client_name: 'second' } }, auditEntry('base-2', { type: 'client.based' }), base)).toBeUndefined();
        expect((await s.clients.get(T, 'ac-base'))?.metadata).toMatchObject({ description: 'first', client_name: base.client_name });
        expect((await entriesOf('client.based')).map((e) => e.id)).toEqual(['base-1']);
        // On the current base (equal as values, whatever its key order) it writes.
        const current = (await s.clients.get(T, 'ac-base'))!.metadata;
        const reordered = Object.fromEntries(Object.entries(current).reverse()) as typeof current;
        expect((await s.clients.update(T, 'ac-base', { metadata: { ...current, client_name: 'second' } }, undefined, reordered))?.metadata.client_name).toBe('second');
      });

      it('writes no entry when the client write changes nothing or is refused', async () => {
        expect(await s.clients.update(T, 'missing', { active: false }, auditEntry('a-none-1', { type: 'client.ghost' }))).toBeUndefined();
        expect(await s.clients.delete(T, 'missing', auditEntry('a-none-2', { type: 'client.ghost' }))).toBe(false);
        await s.clients.create(T, clientRecord('ac2'));
        await expect(s.clients.create(T, clientRecord('ac2'), auditEntry('a-none-3', { type: 'client.ghost' }))).rejects.toThrow();
        expect(await entriesOf('client.ghost')).toEqual([]);
      });

      it('stores a user write and its entry together, and none for an unknown id or a refused duplicate', async () => {
        const u = user();
        await s.users.create(T, u, auditEntry('u-create', { type: 'user.created', user_id: u.id }));
        expect(await s.audit.get(T, 'u-create')).toMatchObject({ type: 'user.created', user_id: u.id });
        await s.users.update(T, u.id, { locked: true }, auditEntry('u-lock', { type: 'user.locked' }));
        expect(await s.audit.get(T, 'u-lock')).toMatchObject({ type: 'user.locked' });
        expect(await s.users.update(T, 'missing', { locked: true }, auditEntry('u-none-1', { type: 'user.ghost' }))).toBeUndefined();
        await expect(s.users.create(T, { ...user(), email: u.email }, auditEntry('u-none-2', { type: 'user.ghost' }))).rejects.toEqual(new UniqueViolation('email'));
        const other = user();
        await s.users.create(T, other);
        await expect(s.users.update(T, other.id, { email: u.email }, auditEntry('u-none-3', { type: 'user.ghost' }))).rejects.toEqual(new UniqueViolation('email'));
        expect(await entriesOf('user.ghost')).toEqual([]);
      });

      it('reads a user write\'s entries back exactly as given (hostile text, nested details, nulls, the instant)', async () => {
        const u = user();
        await s.users.create(T, u);
        const hostile = "x'); DELETE FROM audit_entries; -- \\ é 🙂";
        const entries = [
          auditEntry('exact-1', { tenant_id: T, type: 'login', username: hostile, user_id: u.id, user_agent: hostile, details: { method: hostile, nested: { n: 1, list: [1, 'two', null] } }, timestamp: '2026-03-04T05:06:07.089Z' }),
          auditEntry('exact-2', { tenant_id: T, type: 'session.created', ip_address: null, user_agent: null, details: {} }),
        ];
        await s.users.update(T, u.id, { last_login_at: new Date().toISOString() }, entries);
        expect(await s.audit.get(T, 'exact-1')).toEqual(entries[0]);
        expect(await s.audit.get(T, 'exact-2')).toEqual(entries[1]);
      });

      it('leaves no change behind when the entry cannot be written (a duplicate entry id)', async () => {
        await s.audit.insert(T, auditEntry('taken-id', { type: 'seed' }));
        await expect(s.clients.create(T, clientRecord('ac3'), auditEntry('taken-id', { type: 'client.created' }))).rejects.toThrow();
        expect(await s.clients.get(T, 'ac3')).toBeUndefined();
        const u = user();
        await expect(s.users.create(T, u, auditEntry('taken-id', { type: 'user.created' }))).rejects.toThrow();
        expect(await s.users.get(T, u.id)).toBeUndefined();
        await s.users.create(T, u);
        await expect(s.users.update(T, u.id, { nickname: 'changed' }, auditEntry('taken-id', { type: 'user.updated' }))).rejects.toThrow();
        expect((await s.users.get(T, u.id))?.nickname).toBe(u.nickname);
      });

      it('never writes a deleted user again: of concurrent deletes one erases and audits, the rest find no user', async () => {
        const u = user();
        await s.users.create(T, u);
        const erase = (n: number) => s.users.update(T, u.id, { email: null, deleted_at: new Date().toISOString() }, auditEntry(`del-${n}`, { type: 'user.erased', user_id: u.id }));
        const results = await Promise.all([1, 2, 3, 4].map(erase));
        expect(results.filter((r) => r !== undefined)).toHaveLength(1);
        expect(await entriesOf('user.erased')).toHaveLength(1);
        // Any later write (a sign-in stamp, a password set through an old reset link) changes nothing.
        expect(await s.users.update(T, u.id, { nickname: 'back', password_hash: 'x' }, auditEntry('del-late', { type: 'user.erased' }))).toBeUndefined();
        expect((await s.users.get(T, u.id))?.nickname).toBe(u.nickname);
        expect(await entriesOf('user.erased')).toHaveLength(1);
      });

      it('leaves updated_at alone when a write only stamps the sign-in (OIDC Core 5.1: the profile did not change)', async () => {
        const u = user({ updated_at: '2020-01-01T00:00:00.000Z' });
        await s.users.create(T, u);
        const signedIn = await s.users.update(T, u.id, { last_login_at: new Date().toISOString() });
        expect(signedIn?.updated_at).toBe('2020-01-01T00:00:00.000Z');
        expect((await s.users.get(T, u.id))?.updated_at).toBe('2020-01-01T00:00:00.000Z');
        const renamed = await s.users.update(T, u.id, { name: 'Renamed', last_login_at: new Date().toISOString() });
        expect(renamed?.updated_at).not.toBe('2020-01-01T00:00:00.000Z');
      });

      it('stores several entries with one user write (a sign-in), or none of them and no change', async () => {
        const u = user();
        await s.users.create(T, u);
        const stamp = new Date().toISOString();
        await s.users.update(T, u.id, { last_login_at: stamp }, [auditEntry('si-login', { type: 'login' }), auditEntry('si-session', { type: 'session.created' })]);
        expect((await s.users.get(T, u.id))?.last_login_at).toBe(stamp);
        expect(await s.audit.get(T, 'si-login')).toMatchObject({ type: 'login' });
        expect(await s.audit.get(T, 'si-session')).toMatchObject({ type: 'session.created' });
        // The second entry cannot be written: the first is not kept, nor the change.
        await expect(s.users.update(T, u.id, { last_login_at: null }, [auditEntry('si-login-2', { type: 'login' }), auditEntry('taken-id', { type: 'session.created' })])).rejects.toThrow();
        expect((await s.users.get(T, u.id))?.last_login_at).toBe(stamp);
        expect(await s.audit.get(T, 'si-login-2')).toBeUndefined();
      });
    });

    describe('login attempts', () => {
      const lt = 'login-t';

      it('counts failures of a key within the window and forgets older ones', async () => {
        expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(100), at(0))).toBe(1);
        expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(110), at(0))).toBe(2);
        expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(120), at(0))).toBe(3);
        expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(130), at(115))).toBe(2);
        expect(await backend.probe.loginAttemptTimes(lt, 'account:u1')).toEqual([at(120), at(130)]); // older rows were pruned
      });

      it('keeps keys apart', async () => {
        expect(await s.loginAttempts.recordFailure(lt, 'ip:10.0.0.1', at(130), at(0))).toBe(1);
        expect(await s.loginAttempts.recordFailure(lt, 'account:u2', at(130), at(0))).toBe(1);
      });

      it('clears one key', async () => {
        await s.loginAttempts.clear(lt, 'account:u1');
        expect(await s.loginAttempts.recordFailure(lt, 'account:u1', at(140), at(0))).toBe(1);
        expect(await s.loginAttempts.recordFailure(lt, 'ip:10.0.0.1', at(140), at(0))).toBe(2);
      });

      it('counts concurrent failures of one key exactly (each caller sees its own position)', async () => {
        const counts = await Promise.all(Array.from({ length: 12 }, (_, i) => s.loginAttempts.recordFailure('login-burst', 'account:x', at(200 + i), at(0))));
        expect(counts.sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
      });

      it('isolates tenants', async () => {
        expect(await s.loginAttempts.recordFailure('login-other', 'account:u1', at(141), at(0))).toBe(1);
        await s.loginAttempts.clear('login-other', 'ip:10.0.0.1');
        expect(await s.loginAttempts.recordFailure(lt, 'ip:10.0.0.1', at(142), at(0))).toBe(3);
      });
    });

    describe('users', () => {
      const T = 'users-t';
      const OTHER = 'users-acme';

      it('creates and reads back every field with its type', async () => {
        const u = user({ username: 'alice', name: 'Alice A', role: 'admin', mfa_enabled: true, mfa_methods: ['totp'], mfa_secret_sealed: 'sealed', email_verified: true, locked_until: at(9), last_login_at: at(8) });
        await s.users.create(T, u);
        expect(await s.users.get(T, u.id)).toEqual(u);
        expect(await s.users.get(T, 'nope')).toBeUndefined();
      });

      it('finds by e-mail case-insensitively, never an anonymised user', async () => {
        const u = user({ email: 'Mixed.Case@Example.com' });
        await s.users.create(T, u);
        expect((await s.users.findByEmail(T, 'mixed.case@EXAMPLE.COM'))?.id).toBe(u.id);
        expect(await s.users.findByEmail(OTHER, 'mixed.case@example.com')).toBeUndefined();
        const gone = user({ email: 'gone@example.com' });
        await s.users.create(T, gone);
        await s.users.update(T, gone.id, { deleted_at: new Date().toISOString() });
        expect(await s.users.findByEmail(T, 'gone@example.com')).toBeUndefined();
      });

      it('refuses a second live user with the same e-mail (any case) or username, but not after anonymisation', async () => {
        await s.users.create(T, user({ email: 'dup@example.com', username: 'dupname' }));
        await expect(s.users.create(T, user({ email: 'DUP@example.com' }))).rejects.toEqual(new UniqueViolation('email'));
        await expect(s.users.create(T, user({ username: 'DupName' }))).rejects.toEqual(new UniqueViolation('username'));
        await expect(s.users.create(OTHER, user({ email: 'dup@example.com', username: 'dupname' }))).resolves.toBeUndefined();
        const old = user({ email: 'reuse@example.com' });
        await s.users.create(T, old);
        await s.users.update(T, old.id, { deleted_at: new Date().toISOString() });
        await expect(s.users.create(T, user({ email: 'reuse@example.com' }))).resolves.toBeUndefined();
      });

      it('refuses a duplicate id as a UniqueViolation on id', async () => {
        const u = user();
        await s.users.create(T, u);
        await expect(s.users.create(T, { ...u, email: 'other-address@example.com' })).rejects.toEqual(new UniqueViolation('id'));
      });

      it('updates only the given columns, stamps updated_at, and reports unknown ids', async () => {
        const u = user({ given_name: 'Keep', nickname: 'nick' });
        await s.users.create(T, u);
        const updated = await s.users.update(T, u.id, { nickname: null, locked: true, mfa_methods: ['totp', 'webauthn'] });
        expect(updated).toMatchObject({ given_name: 'Keep', nickname: null, locked: true, mfa_methods: ['totp', 'webauthn'], created_at: u.created_at });
        expect(updated!.updated_at > u.updated_at).toBe(true);
        expect(await s.users.update(T, 'missing', { locked: true })).toBeUndefined();
        expect(await s.users.update(OTHER, u.id, { locked: true })).toBeUndefined();
        const taken = (await s.users.list(T, {}, page({ limit: 1 }))).items[0]!;
        await expect(s.users.update(T, u.id, { email: taken.email!.toUpperCase() })).rejects.toBeInstanceOf(UniqueViolation);
      });

      it('never changes id or created_at, and ignores unknown keys', async () => {
        const u = user();
        await s.users.create(T, u);
        const updated = await s.users.update(T, u.id, { created_at: at(999), name: 'N', ...({ id: 'hijack', tenant_id: 'x', bogus: 1 } as object) } as never);
        expect(updated).toMatchObject({ id: u.id, created_at: u.created_at, name: 'N' });
      });

      describe('list', () => {
        const L = 'users-list';
        beforeAll(async () => {
          await s.users.create(L, user({ id: 'l1', email: 'ann@example.com', username: 'ann', name: 'Ann 100% Real' }));
          await s.users.create(L, user({ id: 'l2', email: 'bob_smith@example.com', username: 'bob', role: 'admin' }));
          await s.users.create(L, user({ id: 'l3', email: 'bobXsmith@example.com', account_enabled: false }));
          await s.users.create(L, user({ id: 'l4', email: 'carl@example.com', auth_provider: 'google', name: 'Carl' }));
          await s.users.create(L, user({ id: 'l5', email: 'dora@example.com', username: 'd\\ora' }));
          await s.users.create(OTHER, user({ id: 'x1', email: 'ann@other.example' }));
        });
        const ids = async (filter: Parameters<Storage['users']['list']>[1], p = page({ limit: 100 })) => (await s.users.list(L, filter, p)).items.map((u) => u.id);

        it('is scoped to the tenant and ordered by creation', async () => {
          expect(await ids({})).toEqual(['l1', 'l2', 'l3', 'l4', 'l5']);
          expect(await s.users.count(L)).toBe(5);
        });

        it('never lists or counts a deleted (anonymised) user, whose row get still finds for the audit trail (issue 18 item 3)', async () => {
          const D = 'users-list-deleted';
          await s.users.create(D, user({ id: 'd1', email: 'live@example.com' }));
          await s.users.create(D, user({ id: 'd2', email: 'gone@example.com', account_enabled: false }));
          await s.users.update(D, 'd2', { email: null, deleted_at: new Date().toISOString() });
          expect((await s.users.list(D, {}, page({ limit: 100, include_count: true }))).items.map((u) => u.id)).toEqual(['d1']);
          expect((await s.users.list(D, { account_enabled: false }, page({ limit: 100, include_count: true }))).items).toEqual([]);
          expect((await s.users.list(D, {}, page({ limit: 100, include_count: true }))).total_count).toBe(1);
          expect(await s.users.count(D)).toBe(1);
          expect((await s.users.get(D, 'd2'))?.deleted_at).toEqual(expect.any(String));
        });

        it('filters by account_enabled, role and auth_provider', async () => {
          expect(await ids({ account_enabled: false })).toEqual(['l3']);
          expect(await ids({ account_enabled: true })).toEqual(['l1', 'l2', 'l4', 'l5']);
          expect(await ids({ role: 'admin' })).toEqual(['l2']);
          expect(await ids({ auth_provider: 'google' })).toEqual(['l4']);
          expect(await ids({ role: 'admin', account_enabled: false })).toEqual([]);
        });

        it('searches e-mail, username and name, case-insensitively', async () => {
          expect(await ids({ q: 'ANN' })).toEqual(['l1']);
          expect(await ids({ q: 'carl' })).toEqual(['l4']);
          expect(await ids({ q: 'bob' })).toEqual(['l2', 'l3']);
        });

        it('takes LIKE wildcards in q literally', async () => {
          expect(await ids({ q: 'bob_' })).toEqual(['l2']);
          expect(await ids({ q: '100%' })).toEqual(['l1']);
          expect(await ids({ q: '%' })).toEqual(['l1']);
          expect(await ids({ q: '_' })).toEqual(['l2']);
          expect(await ids({ q: 'd\\o' })).toEqual(['l5']);
        });

        it('pages with an (created_at, id) cursor and counts the whole filter', async () => {
          const first = await s.users.list(L, {}, page({ limit: 2, include_count: true }));
          expect(first.items.map((u) => u.id)).toEqual(['l1', 'l2']);
          expect(first).toMatchObject({ has_more: true, total_count: 5 });
          const last = first.items[1]!;
          const second = await s.users.list(L, {}, page({ limit: 2, after: { created_at: last.created_at, id: last.id } }));
          expect(second.items.map((u) => u.id)).toEqual(['l3', 'l4']);
          expect(second.total_count).toBeUndefined();
          const end = await s.users.list(L, {}, page({ limit: 2, after: { created_at: second.items[1]!.created_at, id: 'l4' } }));
          expect(end.items.map((u) => u.id)).toEqual(['l5']);
          expect(end.has_more).toBe(false);
          expect((await s.users.list(L, { q: 'bob' }, page({ include_count: true, limit: 1 }))).total_count).toBe(2);
        });
      });
    });

    describe('registration tokens', () => {
      let n = 0;
      const fresh = () => `regtok-${++n}`;
      const repo = () => s.registrationTokens;

      it('round-trips a record, found by jti and by hash', async () => {
        const T = fresh();
        const r = token({ policies: ['general-policy', 'native-only'], note: 'for the mobile team' });
        await repo().create(T, r);
        expect(await repo().get(T, r.jti)).toEqual(r);
        expect(await repo().findByHash(T, r.token_hash)).toEqual(r);
        expect(await repo().findByHash(T, 'hash-unknown')).toBeUndefined();
        expect(await repo().get(T, 'unknown')).toBeUndefined();
      });

      it("round-trips the creator's scopes (issue 12), empty and absent alike", async () => {
        const T = fresh();
        const held = token({ creator_scopes: ['svc:clients:write', 'svc:users:read'] });
        const none = token({ creator_scopes: [] });
        const legacy = token({ creator_scopes: null });
        for (const r of [held, none, legacy]) await repo().create(T, r);
        expect((await repo().get(T, held.jti))!.creator_scopes).toEqual(['svc:clients:write', 'svc:users:read']);
        expect((await repo().findByHash(T, none.token_hash))!.creator_scopes).toEqual([]);
        expect((await repo().get(T, legacy.jti))!.creator_scopes).toBeNull();
        const listed = await repo().list(T, { limit: 10, include_count: false }, iso());
        expect(listed.items.map((r) => r.creator_scopes)).toEqual(expect.arrayContaining([['svc:clients:write', 'svc:users:read'], [], null]));
      });

      it('consumeUse counts up to max_usage_count and then refuses; releaseUse gives one back', async () => {
        const T = fresh();
        const r = token({ max_usage_count: 2 });
        await repo().create(T, r);
        expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
        expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
        expect(await repo().consumeUse(T, r.jti, iso())).toBe(false);
        expect((await repo().get(T, r.jti))!.current_usage_count).toBe(2);
        await repo().releaseUse(T, r.jti);
        expect((await repo().get(T, r.jti))!.current_usage_count).toBe(1);
        expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
        expect(await repo().consumeUse(T, r.jti, iso())).toBe(false);
      });

      it('releaseUse never goes below zero', async () => {
        const T = fresh();
        const r = token();
        await repo().create(T, r);
        await repo().releaseUse(T, r.jti);
        expect((await repo().get(T, r.jti))!.current_usage_count).toBe(0);
      });

      it('consumeUse refuses an expired token, judged by the given clock', async () => {
        const T = fresh();
        const r = token({ expires_at: iso(HOUR) });
        await repo().create(T, r);
        expect(await repo().consumeUse(T, r.jti, iso(2 * HOUR))).toBe(false);
        expect(await repo().consumeUse(T, r.jti, r.expires_at)).toBe(false); // exactly at expires_at it is expired
        expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
        expect((await repo().get(T, r.jti))!.current_usage_count).toBe(1);
      });

      it('revoke marks once (a second revoke is false) and blocks consumeUse', async () => {
        const T = fresh();
        const r = token();
        await repo().create(T, r);
        const when = iso();
        expect(await repo().revoke(T, r.jti, when)).toBe(true);
        expect(await repo().revoke(T, r.jti, iso())).toBe(false);
        expect(await repo().revoke(T, 'unknown', iso())).toBe(false);
        expect((await repo().get(T, r.jti))!.revoked_at).toBe(when);
        expect(await repo().consumeUse(T, r.jti, iso())).toBe(false);
      });

      it('lists only active tokens (not revoked, not expired, not used up), in pages with a total count', async () => {
        const T = fresh();
        const base = Date.now();
        const ms = (i: number) => new Date(base + i).toISOString();
        const active = [0, 1, 2].map((i) => token({ jti: `a${i}`, created_at: ms(i) }));
        const revoked = token({ jti: 'r', created_at: ms(3) });
        const expired = token({ jti: 'e', created_at: ms(4), expires_at: iso(-1000) });
        const usedUp = token({ jti: 'u', created_at: ms(5), max_usage_count: 1, current_usage_count: 1 });
        // One use left: still active.
        const partly = token({ jti: 'p', created_at: ms(6), max_usage_count: 3, current_usage_count: 2 });
        for (const r of [...active, revoked, expired, usedUp, partly]) await repo().create(T, r);
        await repo().revoke(T, 'r', iso());

        const first = await repo().list(T, { limit: 2, include_count: true }, iso());
        expect(first.items.map((r) => r.jti)).toEqual(['a0', 'a1']);
        expect(first.has_more).toBe(true);
        expect(first.total_count).toBe(4);
        const last = first.items[1]!;
        const second = await repo().list(T, { limit: 2, include_count: false, after: { created_at: last.created_at, id: last.jti } }, iso());
        expect(second.items.map((r) => r.jti)).toEqual(['a2', 'p']);
        expect(second.has_more).toBe(false);
        expect(second.total_count).toBeUndefined();
        // A token used up by its last registration leaves the list; it is still read by jti.
        expect(await repo().consumeUse(T, 'p', iso())).toBe(true);
        const after = await repo().list(T, { limit: 10, include_count: true }, iso());
        expect(after.items.map((r) => r.jti)).toEqual(['a0', 'a1', 'a2']);
        expect(after.total_count).toBe(3);
        expect((await repo().get(T, 'u'))!.current_usage_count).toBe(1);
      });

      it('keeps tenants apart', async () => {
        const acme = fresh();
        const globex = fresh();
        const r = token({ jti: 'shared-jti', token_hash: 'shared-hash' });
        await repo().create(acme, r);
        expect(await repo().get(globex, r.jti)).toBeUndefined();
        expect(await repo().findByHash(globex, r.token_hash)).toBeUndefined();
        expect(await repo().consumeUse(globex, r.jti, iso())).toBe(false);
        expect(await repo().revoke(globex, r.jti, iso())).toBe(false);
        expect((await repo().list(globex, { limit: 10, include_count: true }, iso())).total_count).toBe(0);
        await repo().create(globex, { ...r, max_usage_count: 5 });
        expect(await repo().consumeUse(globex, r.jti, iso())).toBe(true);
        const a = (await repo().get(acme, r.jti))!;
        expect(a.current_usage_count).toBe(0);
        expect(a.revoked_at).toBeNull();
        expect((await repo().list(acme, { limit: 10, include_count: true }, iso())).total_count).toBe(1);
      });

      it('never exceeds max_usage_count with three instances consuming at once', async () => {
        const T = fresh();
        const max = 100;
        const r = token({ max_usage_count: max });
        await repo().create(T, r);
        const others = [await backend.openAnother(), await backend.openAnother()];
        try {
          const all = [s, ...others].flatMap((st) => Array.from({ length: 60 }, () => st.registrationTokens.consumeUse(T, r.jti, iso())));
          const won = (await Promise.all(all)).filter(Boolean).length;
          expect(won).toBe(max);
          expect((await repo().get(T, r.jti))!.current_usage_count).toBe(max);
        } finally {
          for (const o of others) await o.close();
        }
      });
    });

    describe('account tokens', () => {
      let n = 0;
      const fresh = () => `accttok-${++n}`;
      const repo = () => s.accountTokens;
      const at = (offsetSeconds: number) => new Date(Date.now() + offsetSeconds * 1000).toISOString();
      const record = (over: Partial<AccountTokenRecord> = {}): AccountTokenRecord => ({
        token_hash: `hash-${n}-${Math.random().toString(36).slice(2)}`,
        kind: 'password_reset',
        user_id: 'user-1',
        email: 'ada@example.com',
        data: null,
        created_at: at(0),
        expires_at: at(3600),
        used_at: null,
        ...over,
      });

      it('finds a usable token without changing it, consumes it exactly once', async () => {
        const T = fresh();
        const r = record({ data: { interaction: 'abc' } });
        await repo().create(T, r);
        expect(await repo().findUsable(T, 'password_reset', r.token_hash, at(0))).toEqual(r);
        expect(await repo().findUsable(T, 'verify_email', r.token_hash, at(0))).toBeUndefined();
        const used = await repo().consume(T, 'password_reset', r.token_hash, at(0));
        expect(used).toMatchObject({ token_hash: r.token_hash, user_id: 'user-1', data: { interaction: 'abc' } });
        expect(await repo().consume(T, 'password_reset', r.token_hash, at(0))).toBeUndefined();
        expect(await repo().findUsable(T, 'password_reset', r.token_hash, at(0))).toBeUndefined();
      });

      it('refuses an expired token, another tenant and another kind', async () => {
        const T = fresh();
        const r = record({ expires_at: at(60) });
        await repo().create(T, r);
        expect(await repo().consume(T, 'password_reset', r.token_hash, at(61))).toBeUndefined();
        expect(await repo().consume(fresh(), 'password_reset', r.token_hash, at(0))).toBeUndefined();
        expect(await repo().consume(T, 'verify_email', r.token_hash, at(0))).toBeUndefined();
        expect(await repo().consume(T, 'password_reset', r.token_hash, at(0))).toBeDefined();
      });

      it('of concurrent consumers only one gets the token', async () => {
        const T = fresh();
        const r = record();
        await repo().create(T, r);
        const results = await Promise.all(Array.from({ length: 20 }, () => repo().consume(T, 'password_reset', r.token_hash, at(0))));
        expect(results.filter(Boolean)).toHaveLength(1);
      });

      it('counts tokens per address since a time, and expires a user\'s unused tokens', async () => {
        const T = fresh();
        await repo().create(T, record({ created_at: at(-7200) }));
        const a = record({ created_at: at(-10) });
        const b = record({ created_at: at(-5) });
        await repo().create(T, a);
        await repo().create(T, b);
        await repo().create(T, record({ email: 'other@example.com', user_id: 'user-2' }));
        expect(await repo().countSince(T, 'password_reset', 'ada@example.com', at(-3600))).toBe(2);
        expect(await repo().countSince(T, 'verify_email', 'ada@example.com', at(-3600))).toBe(0);
        await repo().expireForUser(T, 'password_reset', 'user-1', at(0));
        expect(await repo().findUsable(T, 'password_reset', a.token_hash, at(0))).toBeUndefined();
        expect(await repo().findUsable(T, 'password_reset', b.token_hash, at(0))).toBeUndefined();
      });
    });

    describe('account tokens sweep', () => {
      const at = (offsetSeconds: number) => new Date(Date.now() + offsetSeconds * 1000).toISOString();
      const token = (hash: string, expires: string): AccountTokenRecord => ({
        token_hash: hash, kind: 'password_reset', user_id: 'user-1', email: 'ada@example.com', data: null, created_at: at(-7200), expires_at: expires, used_at: null,
      });

      it('deletes expired tokens of every tenant, used or not, and keeps live ones', async () => {
        const [A, B] = ['acct-sweep-a', 'acct-sweep-b'];
        await s.accountTokens.create(A, token('a-dead', at(-60)));
        await s.accountTokens.create(A, { ...token('a-used-dead', at(-30)), used_at: at(-3000) });
        await s.accountTokens.create(A, token('a-live', at(3600)));
        await s.accountTokens.create(B, token('b-dead', at(-1)));
        const removed = await s.accountTokens.sweepExpired(at(0));
        expect(removed).toBeGreaterThanOrEqual(3);
        expect(await backend.probe.accountTokenHashes(A)).toEqual(['a-live']);
        expect(await backend.probe.accountTokenHashes(B)).toEqual([]);
        expect(await s.accountTokens.findUsable(A, 'password_reset', 'a-live', at(0))).toBeDefined();
        // Repeated sweeps are harmless.
        expect(await s.accountTokens.sweepExpired(at(0))).toBe(0);
      });

      it('never deletes a live token, even when asked with a time in the future', async () => {
        const T = 'acct-sweep-future';
        await s.accountTokens.create(T, token('live', at(3600)));
        await s.accountTokens.create(T, token('dead', at(-5)));
        await s.accountTokens.sweepExpired(at(7200));
        // PostgreSQL: the maintenance policies check the expiry by the database clock, so a forged
        // `before` cannot remove a live token. SQLite has no roles; the service passes its own clock.
        expect(await backend.probe.accountTokenHashes(T)).toEqual(backend.storage.kind === 'postgresql' ? ['live'] : []);
      });
    });

    describe('user preferences', () => {
      it('stores one object per user, replaced on put, scoped by tenant', async () => {
        const repo = s.userPreferences;
        expect(await repo.get('prefs-a', 'u1')).toBeUndefined();
        await repo.put('prefs-a', 'u1', { alerts: { password_changed: false } }, new Date().toISOString());
        await repo.put('prefs-a', 'u1', { alerts: { password_changed: true, mfa_changed: false } }, new Date().toISOString());
        expect(await repo.get('prefs-a', 'u1')).toEqual({ alerts: { password_changed: true, mfa_changed: false } });
        expect(await repo.get('prefs-b', 'u1')).toBeUndefined();
        expect(await repo.get('prefs-a', 'u2')).toBeUndefined();
      });
    });

    describe('social identities', () => {
      const acme = 'social-acme';
      const globex = 'social-globex';
      const at = '2026-11-25T01:00:00.000Z';
      const identity = (provider: string, subject: string, userId: string) => ({ provider, subject, user_id: userId, email: `${subject}@upstream.example`, linked_at: at, last_used_at: null });

      it('links, finds, lists by user, touches and unlinks', async () => {
        await s.socialIdentities.link(acme, identity('google', 'g-1', 'u-1'));
        await s.socialIdentities.link(acme, identity('github', '42', 'u-1'));
        await s.socialIdentities.link(acme, identity('google', 'g-2', 'u-2'));
        expect(await s.socialIdentities.find(acme, 'google', 'g-1')).toEqual(identity('google', 'g-1', 'u-1'));
        expect(await s.socialIdentities.find(acme, 'google', 'G-1')).toBeUndefined();
        expect((await s.socialIdentities.listByUser(acme, 'u-1')).map((i) => `${i.provider}:${i.subject}`).sort()).toEqual(['github:42', 'google:g-1']);
        await s.socialIdentities.touch(acme, 'google', 'g-1', '2026-11-25T02:00:00.000Z');
        expect((await s.socialIdentities.find(acme, 'google', 'g-1'))?.last_used_at).toBe('2026-11-25T02:00:00.000Z');
        // Only the owner's link is removed: another user's id removes nothing.
        expect(await s.socialIdentities.unlink(acme, 'u-2', 'google', 'g-1')).toBe(false);
        expect(await s.socialIdentities.unlink(acme, 'u-1', 'google', 'g-1')).toBe(true);
        expect(await s.socialIdentities.find(acme, 'google', 'g-1')).toBeUndefined();
        await s.socialIdentities.unlinkAll(acme, 'u-1');
        expect(await s.socialIdentities.listByUser(acme, 'u-1')).toEqual([]);
        expect(await s.socialIdentities.listByUser(acme, 'u-2')).toHaveLength(1);
      });

      it('refuses a second link of one upstream account (to anyone) with UniqueViolation', async () => {
        await s.socialIdentities.link(acme, identity('corp', 'dup', 'u-3'));
        await expect(s.socialIdentities.link(acme, identity('corp', 'dup', 'u-4'))).rejects.toMatchObject({ field: 'identity' });
      });

      it('keeps tenants apart', async () => {
        expect(await s.socialIdentities.find(globex, 'google', 'g-2')).toBeUndefined();
        await s.socialIdentities.link(globex, identity('google', 'g-2', 'other-user'));
        expect((await s.socialIdentities.find(acme, 'google', 'g-2'))?.user_id).toBe('u-2');
        expect((await s.socialIdentities.find(globex, 'google', 'g-2'))?.user_id).toBe('other-user');
        expect(await s.socialIdentities.unlink(globex, 'u-2', 'google', 'g-2')).toBe(false);
      });
    });

    describe('webauthn credentials and challenges', () => {
      const acme = 'wa-acme';
      const globex = 'wa-globex';
      const cred = (over: Partial<WebauthnCredentialRecord> = {}): WebauthnCredentialRecord => ({
        id: `cred-${Math.random().toString(36).slice(2)}`,
        user_id: 'wa-user-1',
        public_key: 'pQECAyYgASFYIB',
        counter: 0,
        transports: ['internal', 'hybrid'],
        device_type: 'singleDevice',
        backed_up: false,
        aaguid: '00000000-0000-0000-0000-000000000000',
        name: 'Laptop',
        created_at: iso(),
        last_used_at: null,
        ...over,
      });

      it('creates and reads back every field with its type; lists a user\'s passkeys oldest first', async () => {
        const a = cred({ created_at: iso(-2000), counter: 7, device_type: 'multiDevice', backed_up: true, name: 'Clé ☃' });
        const b = cred({ created_at: iso(-1000), transports: [] });
        await s.webauthn.createCredential(acme, b);
        await s.webauthn.createCredential(acme, a);
        await s.webauthn.createCredential(acme, cred({ user_id: 'wa-user-2' }));
        expect(await s.webauthn.getCredential(acme, a.id)).toEqual(a);
        expect((await s.webauthn.listCredentials(acme, 'wa-user-1')).map((c) => c.id)).toEqual([a.id, b.id]);
        expect(await s.webauthn.getCredential(acme, 'nope')).toBeUndefined();
      });

      it('refuses a credential ID registered twice in a tenant, allows it in another tenant', async () => {
        const a = cred();
        await s.webauthn.createCredential(acme, a);
        await expect(s.webauthn.createCredential(acme, cred({ id: a.id, user_id: 'wa-user-2' }))).rejects.toBeInstanceOf(UniqueViolation);
        await s.webauthn.createCredential(globex, cred({ id: a.id }));
        expect((await s.webauthn.getCredential(acme, a.id))!.user_id).toBe('wa-user-1');
      });

      it('stores a passkey with its audit entry, and neither when the credential ID is taken', async () => {
        const a = cred({ user_id: 'wa-audited' });
        await s.webauthn.createCredential(acme, a, auditEntry('wa-enabled', { type: 'mfa_enabled', tenant_id: acme }));
        expect(await s.webauthn.getCredential(acme, a.id)).toEqual(a);
        expect(await s.audit.get(acme, 'wa-enabled')).toMatchObject({ type: 'mfa_enabled' });
        await expect(s.webauthn.createCredential(acme, cred({ id: a.id, user_id: 'wa-other' }), auditEntry('wa-ghost', { type: 'mfa_enabled', tenant_id: acme }))).rejects.toBeInstanceOf(UniqueViolation);
        expect(await s.audit.get(acme, 'wa-ghost')).toBeUndefined();
        // The entry cannot be written (its id is taken): the passkey is not kept either.
        const b = cred({ user_id: 'wa-audited' });
        await expect(s.webauthn.createCredential(acme, b, auditEntry('wa-enabled', { type: 'mfa_enabled', tenant_id: acme }))).rejects.toThrow();
        expect(await s.webauthn.getCredential(acme, b.id)).toBeUndefined();
      });

      it('renames and deletes only the owner\'s passkey', async () => {
        const a = cred({ user_id: 'wa-owner' });
        await s.webauthn.createCredential(acme, a);
        expect(await s.webauthn.renameCredential(acme, 'wa-other', a.id, 'stolen')).toBe(false);
        expect(await s.webauthn.deleteCredential(acme, 'wa-other', a.id)).toBe(false);
        expect(await s.webauthn.renameCredential(acme, 'wa-owner', a.id, 'Phone')).toBe(true);
        expect((await s.webauthn.getCredential(acme, a.id))!.name).toBe('Phone');
        expect(await s.webauthn.deleteCredential(acme, 'wa-owner', a.id)).toBe(true);
        expect(await s.webauthn.getCredential(acme, a.id)).toBeUndefined();
        expect(await s.webauthn.deleteCredential(acme, 'wa-owner', a.id)).toBe(false);
      });

      it('deletes every passkey of one user only', async () => {
        await s.webauthn.createCredential(acme, cred({ user_id: 'wa-many' }));
        await s.webauthn.createCredential(acme, cred({ user_id: 'wa-many' }));
        const kept = cred({ user_id: 'wa-keep' });
        await s.webauthn.createCredential(acme, kept);
        expect(await s.webauthn.deleteUserCredentials(acme, 'wa-many')).toBe(2);
        expect(await s.webauthn.listCredentials(acme, 'wa-many')).toEqual([]);
        expect(await s.webauthn.getCredential(acme, kept.id)).toEqual(kept);
      });

      it('records a use only when the counter moves forward (or stays 0 for counterless authenticators)', async () => {
        const counted = cred({ counter: 5 });
        await s.webauthn.createCredential(acme, counted);
        const at = iso();
        expect(await s.webauthn.recordUse(acme, counted.id, { counter: 5, backed_up: false, at })).toBe(false);
        expect(await s.webauthn.recordUse(acme, counted.id, { counter: 3, backed_up: false, at })).toBe(false);
        expect(await s.webauthn.recordUse(acme, counted.id, { counter: 6, backed_up: true, at })).toBe(true);
        expect(await s.webauthn.getCredential(acme, counted.id)).toEqual({ ...counted, counter: 6, backed_up: true, last_used_at: at });
        const counterless = cred();
        await s.webauthn.createCredential(acme, counterless);
        expect(await s.webauthn.recordUse(acme, counterless.id, { counter: 0, backed_up: false, at })).toBe(true);
        expect(await s.webauthn.recordUse(acme, 'unknown', { counter: 9, backed_up: false, at })).toBe(false);
      });

      it('lets exactly one of two concurrent uses with the same counter pass', async () => {
        const c = cred({ counter: 1 });
        await s.webauthn.createCredential(acme, c);
        const other = await backend.openAnother();
        try {
          const results = await Promise.all([
            s.webauthn.recordUse(acme, c.id, { counter: 2, backed_up: false, at: iso() }),
            other.webauthn.recordUse(acme, c.id, { counter: 2, backed_up: false, at: iso() }),
          ]);
          expect(results.filter(Boolean)).toHaveLength(1);
        } finally {
          await other.close();
        }
      });

      it('takes a challenge once, never after it expired, never from another tenant', async () => {
        await s.webauthn.putChallenge(acme, { challenge: 'ch-1', binding: 'register:s1:u1', expires_at: iso(60_000) });
        await s.webauthn.putChallenge(acme, { challenge: 'ch-old', binding: 'x', expires_at: iso(60_000) });
        expect(await s.webauthn.takeChallenge(globex, 'ch-1', iso())).toBeUndefined();
        expect(await s.webauthn.takeChallenge(acme, 'ch-old', iso(120_000))).toBeUndefined();
        const taken = await s.webauthn.takeChallenge(acme, 'ch-1', iso());
        expect(taken).toMatchObject({ challenge: 'ch-1', binding: 'register:s1:u1' });
        expect(await s.webauthn.takeChallenge(acme, 'ch-1', iso())).toBeUndefined();
      });

      it('keeps tenants apart', async () => {
        const a = cred({ user_id: 'wa-iso' });
        await s.webauthn.createCredential(acme, a);
        expect(await s.webauthn.getCredential(globex, a.id)).toBeUndefined();
        expect(await s.webauthn.listCredentials(globex, 'wa-iso')).toEqual([]);
        expect(await s.webauthn.renameCredential(globex, 'wa-iso', a.id, 'x')).toBe(false);
        expect(await s.webauthn.recordUse(globex, a.id, { counter: 10, backed_up: false, at: iso() })).toBe(false);
        expect(await s.webauthn.deleteCredential(globex, 'wa-iso', a.id)).toBe(false);
        expect(await s.webauthn.deleteUserCredentials(globex, 'wa-iso')).toBe(0);
        expect(await s.webauthn.getCredential(acme, a.id)).toEqual(a);
      });
    });

    describe('resources', () => {
      const acme = 'res-acme';
      const globex = 'res-globex';
      let seq = 0;
      const resource = (over: Partial<ResourceRecord> = {}): ResourceRecord => {
        seq++;
        const created = new Date(Date.UTC(2024, 1, 1, 0, 0, seq)).toISOString();
        return {
          id: `r-${String(seq).padStart(3, '0')}`,
          identifier: `https://api${seq}.example.com/`,
          name: `API ${seq}`,
          scopes: [{ name: 'read:orders', description: 'Read orders' }],
          token_format: 'jwt',
          access_token_ttl: 900,
          signing_alg: 'RS256',
          include_roles: false,
          created_at: created,
          updated_at: created,
          ...over,
        };
      };

      it('creates, reads back every field, and refuses a second identifier in the same tenant', async () => {
        const r = resource({ scopes: [{ name: 'read:orders', description: 'Lire les commandes ☃' }, { name: 'write:orders', description: '' }], include_roles: true, token_format: 'opaque' });
        await s.resources.create(acme, r);
        expect(await s.resources.get(acme, r.id)).toEqual(r);
        await expect(s.resources.create(acme, resource({ identifier: r.identifier }))).rejects.toEqual(new UniqueViolation('identifier'));
        // Unique per tenant only: another tenant may use the same identifier (its tokens have another issuer).
        await s.resources.create(globex, resource({ identifier: r.identifier }));
      });

      it('keeps tenants apart on get, list, update and delete', async () => {
        const mine = resource();
        await s.resources.create(acme, mine);
        expect(await s.resources.get(globex, mine.id)).toBeUndefined();
        expect((await s.resources.all(globex)).some((x) => x.id === mine.id)).toBe(false);
        expect(await s.resources.update(globex, mine.id, { name: 'stolen', updated_at: iso() })).toBeUndefined();
        expect(await s.resources.delete(globex, mine.id)).toBe(false);
        expect((await s.resources.get(acme, mine.id))?.name).toBe(mine.name);
      });

      it('pages in creation order with cursors and counts', async () => {
        const tenant = 'res-paging';
        const made = [resource(), resource(), resource()];
        for (const r of made) await s.resources.create(tenant, r);
        const first = await s.resources.list(tenant, page({ limit: 2, include_count: true }));
        expect(first.items.map((r) => r.id)).toEqual([made[0]!.id, made[1]!.id]);
        expect(first).toMatchObject({ has_more: true, total_count: 3 });
        const last = first.items[1]!;
        const second = await s.resources.list(tenant, page({ limit: 2, after: { created_at: last.created_at, id: last.id } }));
        expect(second.items.map((r) => r.id)).toEqual([made[2]!.id]);
        expect(second.has_more).toBe(false);
        expect(await s.resources.count(tenant)).toBe(3);
        expect((await s.resources.all(tenant)).map((r) => r.id)).toEqual(made.map((r) => r.id));
      });

      it('updates the given fields only and deletes once', async () => {
        const r = resource();
        await s.resources.create(acme, r);
        const later = iso(HOUR);
        const updated = await s.resources.update(acme, r.id, { scopes: [{ name: 'admin', description: 'Everything' }], include_roles: true, updated_at: later });
        expect(updated).toEqual({ ...r, scopes: [{ name: 'admin', description: 'Everything' }], include_roles: true, updated_at: later });
        expect(await s.resources.update(acme, 'missing', { name: 'x', updated_at: later })).toBeUndefined();
        expect(await s.resources.delete(acme, r.id)).toBe(true);
        expect(await s.resources.delete(acme, r.id)).toBe(false);
        expect(await s.resources.get(acme, r.id)).toBeUndefined();
      });
    });

    describe('tenant config', () => {
      const acme = 'config-acme';
      const globex = 'config-globex';

      it('reads {} for a tenant without overrides, and every stored section after puts', async () => {
        expect(await s.tenantConfig.get(acme)).toEqual({});
        const branding = { company_name: 'Acmé ☃', palette_light: { primary: '#1a73e8' } };
        await s.tenantConfig.put(acme, 'branding', branding);
        await s.tenantConfig.put(acme, 'oidc', { ttl: { access_token: 120 } });
        expect(await s.tenantConfig.get(acme)).toEqual({ branding, oidc: { ttl: { access_token: 120 } } });
      });

      it('replaces a section as a whole and keeps the others', async () => {
        await s.tenantConfig.put(acme, 'oidc', { discovery: { op_tos_uri: 'https://acme.example/tos' } });
        const all = await s.tenantConfig.get(acme);
        expect(all.oidc).toEqual({ discovery: { op_tos_uri: 'https://acme.example/tos' } });
        expect(all.branding).toEqual({ company_name: 'Acmé ☃', palette_light: { primary: '#1a73e8' } });
      });

      it('keeps tenants apart', async () => {
        expect(await s.tenantConfig.get(globex)).toEqual({});
        await s.tenantConfig.put(globex, 'branding', { company_name: 'Globex' });
        expect((await s.tenantConfig.get(acme)).branding).toEqual({ company_name: 'Acmé ☃', palette_light: { primary: '#1a73e8' } });
        expect(await s.tenantConfig.get(globex)).toEqual({ branding: { company_name: 'Globex' } });
      });
    });
  });
}
