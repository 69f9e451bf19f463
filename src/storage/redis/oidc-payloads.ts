/**
 * oidc-provider's short-lived artefacts in Redis, with the semantics of the SQL repository
 * (sqlite/oidc.ts): expiry hides a record, consume sets a flag an upsert keeps, revokeByGrantId
 * drops everything of a grant.
 *
 * Key layout (every key starts with "<prefix>:<tenant>:", so no call reaches another tenant):
 *   oidc:<model>:<id>                 hash (see oidc-scripts.ts), EXPIREAT = the artefact's expiry
 *   oidx:uid:<model>:<uid>            -> id, same expiry as the record
 *   oidx:code:<model>:<userCode>      -> id, same expiry as the record
 *   oidx:grant:<grantId>              set of "<model>:<id>", lives as long as its longest member;
 *                                     members whose record expired are pruned as it grows (GRANT_PRUNE)
 *   oidx:grant-prune:<grantId>        the set size at which that pruning looks again, when it found
 *                                     the set mostly live; expires with the set
 *   oidx:model:<model>                sorted set of ids scored by expiry, Sessions and Grants only
 *                                     (LISTED_MODELS: listByModel and countLive without SCAN)
 *   oidx:session-account:<accountId>  sorted set of Session ids scored by expiry
 *   oidx:session-client:<clientId>    sorted set of Session ids scored by expiry
 *   oidx:grant-account:<accountId>    sorted set of Grant ids scored by expiry
 *   oidx:grant-client:<clientId>      sorted set of Grant ids scored by expiry
 *   oidx:grants-indexed               marker: grants saved before the two above are indexed too
 * Nothing needs sweeping: records and index keys carry TTLs, the sorted sets drop expired members
 * whenever they are written (readers skip them by score), and a grant's set drops members whose
 * record is gone while it grows.
 */
import type { Redis } from 'ioredis';
import type { GrantIndexFilter, ListedModel, OidcListedRow, OidcPayloadRepository, OidcPayloadRow, OidcUpsert, SessionIndexFilter, TenantId } from '../types.js';
import { redisCall, tenantKeyPrefix } from './client.js';
import { consumeAndIssueScript, consumeAndUpsertScript, consumeScript, destroyScript, findByPointerScript, indexOldGrantsScript, revokeGrantScript, upsertScript } from './oidc-scripts.js';

const nowSec = () => Math.floor(Date.now() / 1000);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Models are a key segment too (see tenantKeyPrefix). */
const MODEL = /^[A-Za-z]{1,64}$/;

/** A row's arguments to the upsert scripts (ROW_ARGS of them, in the scripts' order). */
function rowArgs({ model, id, payload, expiresAt }: OidcUpsert): string[] {
  const [account, clients] = owners(model, payload);
  return [model, id, JSON.stringify(payload), expiresAt === null ? '' : String(expiresAt), str(payload.uid), str(payload.userCode), str(payload.grantId), account, JSON.stringify(clients)];
}

/**
 * A row consumeAndIssueScript writes as upsert would: one that expires later than now and has no
 * index value but its grant (no uid or user code, no owners).
 */
function issuedOnly({ model, payload, expiresAt }: OidcUpsert, now: number): boolean {
  if (expiresAt === null || expiresAt <= now || str(payload.uid) !== '' || str(payload.userCode) !== '') return false;
  const [account, clients] = owners(model, payload);
  return account === '' && clients.length === 0;
}

/** A row's arguments to consumeAndIssueScript (ISSUE_ARGS of them). */
function issueArgs({ model, id, payload, expiresAt }: OidcUpsert): string[] {
  return [JSON.stringify(payload), String(expiresAt), str(payload.grantId), `${model}:${id}`];
}

/** Clients a session has authorised (the keys of oidc-provider's `authorizations`). */
function sessionClients(payload: Record<string, unknown>): string[] {
  const a = payload.authorizations;
  return a && typeof a === 'object' && !Array.isArray(a) ? Object.keys(a) : [];
}

/** The account and clients a Session or Grant is indexed under (other models: none). */
function owners(model: string, payload: Record<string, unknown>): [string, string[]] {
  if (model === 'Session') return [str(payload.accountId), sessionClients(payload)];
  if (model === 'Grant') return [str(payload.accountId), str(payload.clientId) ? [str(payload.clientId)] : []];
  return ['', []];
}

export interface RedisOidcOptions {
  /** First key segment; tests use their own so runs never collide. Default `svc`. */
  prefix?: string;
}

export class RedisOidcPayloads implements OidcPayloadRepository {
  private readonly prefix: string;
  /** Tenants whose older grants are known to be indexed (indexOldGrantsScript ran once). */
  private readonly grantsIndexed = new Set<string>();

  constructor(
    private readonly redis: Redis,
    opts: RedisOidcOptions = {},
  ) {
    this.prefix = opts.prefix ?? 'svc';
  }

  private base(tenant: TenantId): string {
    return tenantKeyPrefix(this.prefix, tenant);
  }

  private recordPrefix(tenant: TenantId): string {
    return `${this.base(tenant)}oidc:`;
  }

  private record(tenant: TenantId, model: string, id: string): string {
    if (!MODEL.test(model)) throw new Error(`invalid oidc model: ${JSON.stringify(model)}`);
    return `${this.recordPrefix(tenant)}${model}:${id}`;
  }

  private index(tenant: TenantId): string {
    return `${this.base(tenant)}oidx:`;
  }

  upsert(tenant: TenantId, model: string, id: string, payload: Record<string, unknown>, expiresAt: number | null): Promise<void> {
    return this.upsertMany(tenant, [{ model, id, payload, expiresAt }]);
  }

  async upsertMany(tenant: TenantId, rows: OidcUpsert[]): Promise<void> {
    const keys = rows.map((r) => this.record(tenant, r.model, r.id));
    const args = [this.index(tenant), String(nowSec()), ...rows.flatMap(rowArgs)];
    await redisCall(() => upsertScript.run(this.redis, keys, args));
  }

  async consumeAndUpsert(tenant: TenantId, used: { model: string; id: string }, rows: OidcUpsert[]): Promise<boolean> {
    const keys = [this.record(tenant, used.model, used.id), ...rows.map((r) => this.record(tenant, r.model, r.id))];
    const now = nowSec();
    // The tokens a grant issues (new, expiring, indexed under their grant only): the short script.
    if (rows.length && rows.every((r) => issuedOnly(r, now))) {
      const args = [this.index(tenant), String(now), ...rows.flatMap(issueArgs)];
      const issued = await redisCall(() => consumeAndIssueScript.run(this.redis, keys, args));
      if (issued !== -1) return issued === 1;
      // A record to write exists already (nothing was changed): the general script unindexes it.
    }
    const args = [this.index(tenant), String(now), ...rows.flatMap(rowArgs)];
    return (await redisCall(() => consumeAndUpsertScript.run(this.redis, keys, args))) === 1;
  }

  async find(tenant: TenantId, model: string, id: string): Promise<OidcPayloadRow | undefined> {
    const key = this.record(tenant, model, id);
    const [p, e, c] = await redisCall(() => this.redis.hmget(key, 'p', 'e', 'c'));
    // An expired key is gone for every reader (Redis expires it at exactly `e`).
    if (p === null || p === undefined) return undefined;
    return { payload: JSON.parse(p) as Record<string, unknown>, expires_at: e ? Number(e) : null, consumed: Boolean(c) };
  }

  findByUid(tenant: TenantId, model: string, uid: string): Promise<OidcPayloadRow | undefined> {
    return this.findByPointer(tenant, model, `${this.index(tenant)}uid:${model}:${uid}`, 'u', uid);
  }

  findByUserCode(tenant: TenantId, model: string, userCode: string): Promise<OidcPayloadRow | undefined> {
    return this.findByPointer(tenant, model, `${this.index(tenant)}code:${model}:${userCode}`, 'uc', userCode);
  }

  /** Follows a secondary key, and checks the record still carries the value (it may have changed): one script. */
  private async findByPointer(tenant: TenantId, model: string, pointer: string, field: 'u' | 'uc', value: string): Promise<OidcPayloadRow | undefined> {
    const recordOfModel = this.record(tenant, model, '');
    const found = (await redisCall(() => findByPointerScript.run(this.redis, [pointer], [recordOfModel, field, value]))) as Array<string | null> | null;
    const [p, e, c] = found ?? [];
    if (!p) return undefined;
    return { payload: JSON.parse(p) as Record<string, unknown>, expires_at: e ? Number(e) : null, consumed: Boolean(c) };
  }

  async consume(tenant: TenantId, model: string, id: string): Promise<boolean> {
    const key = this.record(tenant, model, id);
    return (await redisCall(() => consumeScript.run(this.redis, [key], [String(nowSec())]))) === 1;
  }

  async destroy(tenant: TenantId, model: string, id: string): Promise<boolean> {
    const key = this.record(tenant, model, id);
    return (await redisCall(() => destroyScript.run(this.redis, [key], [this.index(tenant), model, id]))) === 1;
  }

  async revokeByGrantId(tenant: TenantId, grantId: string): Promise<void> {
    const set = `${this.index(tenant)}grant:${grantId}`;
    await redisCall(() => revokeGrantScript.run(this.redis, [set], [this.index(tenant), this.recordPrefix(tenant), grantId]));
  }

  async listByModel(tenant: TenantId, model: ListedModel): Promise<OidcListedRow[]> {
    if (!MODEL.test(model)) throw new Error(`invalid oidc model: ${JSON.stringify(model)}`);
    return this.rows(tenant, model, await this.liveIds(`${this.index(tenant)}model:${model}`));
  }

  async listSessions(tenant: TenantId, filter: SessionIndexFilter): Promise<OidcListedRow[]> {
    const idx = this.index(tenant);
    const sets: string[] = [];
    if (filter.accountId !== undefined) sets.push(`${idx}session-account:${filter.accountId}`);
    if (filter.clientId !== undefined) sets.push(`${idx}session-client:${filter.clientId}`);
    if (!sets.length) return this.listByModel(tenant, 'Session');
    const [first, second] = await Promise.all(sets.map((k) => this.liveIds(k)));
    const both = second ? new Set(second) : undefined;
    const ids = both ? first!.filter((id) => both.has(id)) : first!;
    return this.rows(tenant, 'Session', ids);
  }

  async listGrantIds(tenant: TenantId, filter: GrantIndexFilter): Promise<string[]> {
    const idx = this.index(tenant);
    const marker = `${idx}grants-indexed`;
    if (!this.grantsIndexed.has(marker)) {
      await redisCall(() => indexOldGrantsScript.run(this.redis, [marker], [idx, this.recordPrefix(tenant), String(nowSec())]));
      this.grantsIndexed.add(marker);
    }
    const sets: string[] = [];
    if (filter.accountId !== undefined) sets.push(`${idx}grant-account:${filter.accountId}`);
    if (filter.clientId !== undefined) sets.push(`${idx}grant-client:${filter.clientId}`);
    const [first, second] = await Promise.all(sets.map((k) => this.liveIds(k)));
    const both = second ? new Set(second) : undefined;
    return both ? first!.filter((id) => both.has(id)) : first!;
  }

  async countLive(tenant: TenantId, model: ListedModel): Promise<number> {
    if (!MODEL.test(model)) throw new Error(`invalid oidc model: ${JSON.stringify(model)}`);
    const key = `${this.index(tenant)}model:${model}`;
    return redisCall(() => this.redis.zcount(key, `(${nowSec()}`, '+inf'));
  }

  /** Ids of an index whose score (expiry) is still ahead. */
  private liveIds(index: string): Promise<string[]> {
    return redisCall(() => this.redis.zrangebyscore(index, `(${nowSec()}`, '+inf'));
  }

  /** The records behind ids, skipping any that expired or went since the index was read. */
  private async rows(tenant: TenantId, model: string, ids: string[]): Promise<OidcListedRow[]> {
    // Sent back to back on one connection: one round trip's latency for the lot.
    const found = await redisCall(() => Promise.all(ids.map((id) => this.redis.hmget(this.record(tenant, model, id), 'p', 'e'))));
    const out: OidcListedRow[] = [];
    found.forEach(([p, e], i) => {
      if (p) out.push({ id: ids[i]!, payload: JSON.parse(p) as Record<string, unknown>, expires_at: e ? Number(e) : null });
    });
    return out;
  }

  /** Redis expires keys itself; there is nothing to sweep. */
  async sweepExpired(): Promise<number> {
    return 0;
  }

  /** Round trip for readiness and health. */
  async ping(): Promise<void> {
    await redisCall(() => this.redis.ping());
  }
}
