/**
 * The sessions domain: the one module that knows oidc-provider's `Session` and `Grant` payload
 * shapes. Sessions as every surface sees them, listed, read and revoked.
 *
 * The account and client filters go to the repository (listSessions, listGrantIds: index lookups on
 * every backend, never a read of all the tenant's grants); `active` and the order are applied here.
 */
import type { OidcPayloadRepository, TenantId } from '../storage/types.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';
import type { SessionsEnded } from './ended.js';

/** What ending sessions needs: the artefacts' storage, and where to report them (ended.ts). */
export interface SessionEnding {
  readonly storage: { readonly oidc: OidcPayloadRepository };
  readonly sessionsEnded: SessionsEnded;
}

export interface SessionView {
  jti: string;
  account_id: string | null;
  client_ids: string[];
  created_at: string;
  expires_at: string | null;
  last_active_at: string;
  active: boolean;
  /** Grants bound to the session (one per client); never serialized. */
  grant_ids: string[];
  /** The session's sid per client, for back-channel logout (ended.ts); never serialized. */
  sids: Record<string, string>;
}

export interface SessionFilter {
  /** Account id (spec query name `username`). */
  username?: string;
  client_id?: string;
  active?: boolean;
}

interface SessionRow {
  id: string;
  payload: Record<string, unknown>;
  expires_at: number | null;
}

/**
 * Session lifetime of the tenant's provider in seconds (see toSessionView for why it matters here).
 * It takes the tenant's effective configuration, never the global one: a tenant may override it.
 */
export const sessionTtl = (config: EffectiveConfig): number => config.oidc.ttl.session;

/** The public session object (CONTRACT.md): everything but the internal grant ids. */
export function presentSession(s: SessionView): Omit<SessionView, 'grant_ids' | 'sids'> {
  const { grant_ids: _grants, sids: _sids, ...out } = s;
  return out;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/**
 * `sessionTtl` (seconds) lets us recover the last activity: oidc-provider re-saves a session on every
 * request that uses it with exp = now + ttl.Session, so exp - ttl is the time of the latest save.
 */
export function toSessionView(row: SessionRow, sessionTtl: number, nowSeconds = Math.floor(Date.now() / 1000)): SessionView {
  const p = row.payload;
  const exp = row.expires_at ?? num(p.exp) ?? null;
  const iat = num(p.iat);
  const loginTs = num(p.loginTs);
  const created = iat ?? loginTs ?? (exp !== null ? exp - sessionTtl : nowSeconds);
  const lastActive = Math.min(nowSeconds, Math.max(created, loginTs ?? 0, exp !== null ? exp - sessionTtl : 0));
  const authorizations = p.authorizations && typeof p.authorizations === 'object' ? (p.authorizations as Record<string, { grantId?: unknown; sid?: unknown }>) : {};
  const sids: Record<string, string> = {};
  for (const [clientId, a] of Object.entries(authorizations)) if (typeof a?.sid === 'string' && a.sid) sids[clientId] = a.sid;
  const accountId = typeof p.accountId === 'string' && p.accountId ? p.accountId : null;
  return {
    jti: row.id,
    account_id: accountId,
    client_ids: Object.keys(authorizations),
    created_at: iso(created),
    expires_at: exp !== null ? iso(exp) : null,
    last_active_at: iso(lastActive),
    // False for an expired row or one without an account: neither is listed (findSessions), so
    // every listed session is active; the field and the filter are the contract's.
    active: accountId !== null && (exp === null || exp > nowSeconds),
    grant_ids: Object.values(authorizations)
      .map((a) => a?.grantId)
      .filter((g): g is string => typeof g === 'string' && g.length > 0),
    sids,
  };
}

function matches(s: SessionView, f: SessionFilter): boolean {
  if (f.username !== undefined && s.account_id !== f.username) return false;
  if (f.client_id !== undefined && !s.client_ids.includes(f.client_id)) return false;
  if (f.active !== undefined && s.active !== f.active) return false;
  return true;
}

/**
 * A session of a user: one someone signed in to. oidc-provider also stores a session for a visitor
 * who never signed in (the form secret of the end-session and device pages, kept an hour:
 * oidc/adapter.ts); that browser state is no session of anyone, so no surface lists, counts, reads
 * or revokes it (docs/decisions.md).
 */
const ofUser = (s: SessionView): boolean => s.account_id !== null;

/** Matching sessions of users, oldest first (created_at, jti): the order the cursors walk. */
export async function findSessions(repo: OidcPayloadRepository, tenant: TenantId, filter: SessionFilter, sessionTtl: number): Promise<SessionView[]> {
  const now = Math.floor(Date.now() / 1000);
  const rows = await repo.listSessions(tenant, { accountId: filter.username, clientId: filter.client_id });
  return rows
    .map((r) => toSessionView(r, sessionTtl, now))
    .filter((s) => ofUser(s) && matches(s, filter))
    .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.jti < b.jti ? -1 : a.jti > b.jti ? 1 : 0));
}

export async function getSession(repo: OidcPayloadRepository, tenant: TenantId, jti: string, sessionTtl: number): Promise<SessionView | undefined> {
  const row = await repo.find(tenant, 'Session', jti);
  const session = row ? toSessionView({ id: jti, payload: row.payload, expires_at: row.expires_at }, sessionTtl) : undefined;
  return session && ofUser(session) ? session : undefined;
}

/**
 * Ends a session and every grant it carries, so the refresh and access tokens issued through it
 * stop working too (revokeByGrantId drops tokens and codes; the Grant row has no grantId column),
 * and reports it so its relying parties get a back-channel logout (ended.ts).
 */
/**
 * Ends a session and its grants. False when another call ended it first (two revocations at once:
 * one of them is the revocation, answered and audited; the other finds nothing to revoke).
 */
export async function revokeSession(ending: SessionEnding, tenant: TenantId, session: SessionView): Promise<boolean> {
  if (!(await dropSession(ending.storage.oidc, tenant, session))) return false;
  ending.sessionsEnded.report(tenant, [session]);
  return true;
}

/** The grants go first (revoking them twice is harmless); the session's own destroy says who ended it. */
async function dropSession(repo: OidcPayloadRepository, tenant: TenantId, session: SessionView): Promise<boolean> {
  for (const grantId of session.grant_ids) await revokeGrant(repo, tenant, grantId);
  return repo.destroy(tenant, 'Session', session.jti);
}

export async function revokeGrant(repo: OidcPayloadRepository, tenant: TenantId, grantId: string): Promise<void> {
  await repo.revokeByGrantId(tenant, grantId);
  await repo.destroy(tenant, 'Grant', grantId);
}

/**
 * Everything an account holds: its sessions and also grants outliving their session (offline
 * access). `keep` spares one session and the grants made in it (the device a user changes their
 * password on stays signed in).
 */
export async function revokeAccount(ending: SessionEnding, tenant: TenantId, accountId: string, sessionTtl: number, keep?: (s: SessionView) => boolean): Promise<number> {
  const repo = ending.storage.oidc;
  const sessions = await findSessions(repo, tenant, { username: accountId }, sessionTtl);
  const ended: SessionView[] = [];
  const kept = new Set<string>();
  for (const s of sessions) {
    if (keep?.(s)) for (const g of s.grant_ids) kept.add(g);
    else if (await dropSession(repo, tenant, s)) ended.push(s);
  }
  ending.sessionsEnded.report(tenant, ended);
  // The account's grants from the index (those of its sessions are already gone).
  for (const grantId of await repo.listGrantIds(tenant, { accountId })) if (!kept.has(grantId)) await revokeGrant(repo, tenant, grantId);
  return ended.length;
}

/** Live sessions and grants a client holds (its statistics); both from indexes. */
export async function countClientActivity(repo: OidcPayloadRepository, tenant: TenantId, clientId: string): Promise<{ sessions: number; grants: number }> {
  const [sessions, grants] = await Promise.all([repo.listSessions(tenant, { clientId }), repo.listGrantIds(tenant, { clientId })]);
  return { sessions: sessions.length, grants: grants.length };
}

/** How many live grants the tenant holds (the tenant statistics), counted where they are stored. */
export function countGrants(repo: OidcPayloadRepository, tenant: TenantId): Promise<number> {
  return repo.countLive(tenant, 'Grant');
}

/** One page of an in-memory, already sorted list, with the same shape the repositories return. */
export function pageOf<T>(items: T[], key: (item: T) => [string, string], page: { limit: number; after?: { created_at: string; id: string }; include_count: boolean }) {
  const after = page.after;
  const rest = after
    ? items.filter((i) => {
        const [c, id] = key(i);
        return c > after.created_at || (c === after.created_at && id > after.id);
      })
    : items;
  return {
    items: rest.slice(0, page.limit),
    has_more: rest.length > page.limit,
    ...(page.include_count ? { total_count: items.length } : {}),
  };
}
