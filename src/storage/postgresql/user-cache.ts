/**
 * Users as the token paths read them, kept in memory on PostgreSQL and evicted by the database's
 * own change notices (issue 17).
 *
 * Why: on PostgreSQL every userinfo, refresh, code exchange and silent re-authentication read the
 * user's row (is the account still enabled, unlocked, not deleted; its claims). That read was the
 * largest single cost of those paths: node-postgres's parsing and the garbage it leaves, and the
 * backend's work, about half of a userinfo request's CPU (bench/README.md, 2026-11-29 08:00 UTC).
 *
 * Why it is safe: a cached user is used only while this instance is known to receive every change
 * to the users table as it commits.
 * - migrations/postgresql/100_user_change_notices.sql: a trigger on `users` sends
 *   `NOTIFY svc_users` with the row's (tenant, id) for every UPDATE and DELETE (and a clear-all for
 *   TRUNCATE), whoever writes: this instance, another instance, `svc` CLI commands, an operator's
 *   psql. PostgreSQL delivers a notice when the writing transaction commits.
 * - One connection of this instance LISTENs. Each notice evicts the row, and marks a read of it
 *   still in flight so that its result is not kept (it may predate the change).
 * - That connection proves it is alive once a second: it notifies itself and must hear its own
 *   notice back before the next one. While it has not (starting, reconnecting, a half-open socket,
 *   a pooler that drops notices), nothing is served from memory or kept: every read goes to the
 *   database, and whatever was held is dropped when the proof comes back.
 * - Writes made through this instance evict at once as well (PgUsers.update), before its caller is
 *   answered, so a disable or a lock acted on by this instance never waits for the notice.
 * - Misses are not cached; an entry lives at most TTL_MS and the cache holds at most MAX_ENTRIES.
 * - What is kept leaves out the password hash and the sealed MFA secrets (UserWithoutSecrets).
 * What remains, for changes made elsewhere (another instance, the CLI, psql), is the time between
 * the writer's commit and its notice's arrival here, one network hop: a request served in that
 * time may still get the old row, where without the memory it would have read the new one. The
 * e2e tests therefore poll for such a change before they compare with oidc-provider's answer. For
 * this instance's own writes there is no such time. A listener that goes deaf while its connection
 * seems up (a half-open socket) is found out within two heartbeats: a change made in those two
 * seconds may be served stale until then.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { TenantId, UserCacheStats, UserWithoutSecrets } from '../types.js';

/** The channel of migrations/postgresql/100_user_change_notices.sql. */
export const USER_CHANNEL = 'svc_users';
/** Entries at most (about 1 KB each). */
export const MAX_ENTRIES = 10_000;
/** Longest an entry is used (a bound for what no notice could report; notices are the rule). */
export const TTL_MS = 5 * 60_000;
/** How often the listening connection proves it hears its own notices. */
export const HEARTBEAT_MS = 1000;
/** Reconnect delays of the listening connection: 100 ms, 200 ms, ... capped at 5 s. */
const reconnectDelay = (attempt: number): number => Math.min(100 * attempt, 5000);

export interface UserCacheOptions {
  /** The connection settings of the pool (same role, same database). */
  client: pg.ClientConfig;
  /** The uncached read. */
  read(tenant: TenantId, id: string): Promise<UserWithoutSecrets | undefined>;
  /** Connection trouble of the listener (the cache is off meanwhile). */
  onError?(err: Error): void;
  heartbeatMs?: number;
  ttlMs?: number;
  maxEntries?: number;
}

interface Entry {
  user: Readonly<UserWithoutSecrets>;
  expires: number;
}

interface InFlight {
  promise: Promise<UserWithoutSecrets | undefined>;
  /** `stale`: a notice (or a local write) for the row arrived while it was being read. */
  mark: { stale: boolean };
}

const keyOf = (tenant: TenantId, id: string): string => `${tenant}\u0000${id}`;

export class PgUserCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, InFlight>();
  private client: pg.Client | undefined;
  /** Whether notices are known to arrive (the last heartbeat came back in time). */
  private live = false;
  /** Bumped at every change of `live`: a read begun under another epoch is not kept. */
  private epoch = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  private attempts = 0;
  /** The heartbeat sent last and not yet heard back (0: none outstanding). */
  private awaited = 0;
  private sent = 0;
  private closed = false;
  private readonly heartbeatMs: number;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  /** Reads answered from memory, and reads that went to the database while serving (metrics). */
  private hits = 0;
  private misses = 0;
  /** Names this instance's heartbeats (instances share the channel; process ids repeat across hosts). */
  private readonly instance = randomUUID();

  constructor(private readonly opts: UserCacheOptions) {
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS;
    this.ttlMs = opts.ttlMs ?? TTL_MS;
    this.maxEntries = opts.maxEntries ?? MAX_ENTRIES;
  }

  /** Starts listening (in the background: until the first heartbeat returns, reads go to the database). */
  start(): void {
    void this.connect();
  }

  /** Whether reads may be served from memory now. */
  get serving(): boolean {
    return this.live;
  }

  /** Number of users held (tests, metrics). */
  get size(): number {
    return this.entries.size;
  }

  /** What the metrics report (metrics.ts watchUserCache). */
  stats(): UserCacheStats {
    return { serving: this.live, entries: this.entries.size, hits: this.hits, misses: this.misses };
  }

  get(tenant: TenantId, id: string): Promise<UserWithoutSecrets | undefined> {
    if (!this.live) return this.opts.read(tenant, id);
    const key = keyOf(tenant, id);
    const hit = this.entries.get(key);
    if (hit) {
      if (hit.expires > Date.now()) {
        this.hits++;
        return Promise.resolve(hit.user);
      }
      this.entries.delete(key);
    }
    // A request for a row already being read joins that read (no second statement, no miss counted).
    const pending = this.inFlight.get(key);
    if (pending) return pending.promise;
    this.misses++;
    const epoch = this.epoch;
    const mark = { stale: false };
    const promise = this.opts
      .read(tenant, id)
      .then((user) => {
        if (user && !mark.stale && this.live && this.epoch === epoch) this.keep(key, user);
        return user;
      })
      .finally(() => {
        if (this.inFlight.get(key)?.mark === mark) this.inFlight.delete(key);
      });
    this.inFlight.set(key, { promise, mark });
    return promise;
  }

  /** A row changed (a notice, or a write of this instance): forget it and any read of it in flight. */
  evict(tenant: TenantId, id: string): void {
    const key = keyOf(tenant, id);
    this.entries.delete(key);
    const flight = this.inFlight.get(key);
    if (flight) {
      flight.mark.stale = true;
      this.inFlight.delete(key);
    }
  }

  /** Forgets everything, reads in flight included. */
  clear(): void {
    this.entries.clear();
    for (const flight of this.inFlight.values()) flight.mark.stale = true;
    this.inFlight.clear();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.setLive(false);
    clearInterval(this.heartbeat);
    clearTimeout(this.reconnect);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private keep(key: string, user: UserWithoutSecrets): void {
    if (this.entries.size >= this.maxEntries) {
      // The oldest insertion goes first (a Map iterates in insertion order).
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    // Frozen, its one array too: every request that reads it gets the same object.
    const kept = { ...user, mfa_methods: Object.freeze([...user.mfa_methods]) as string[] };
    this.entries.set(key, { user: Object.freeze(kept), expires: Date.now() + this.ttlMs });
  }

  private setLive(live: boolean): void {
    if (this.live === live) return;
    this.live = live;
    this.epoch++;
    // Dropped on both edges: going down, nothing held can be trusted any more; coming up, what
    // was held before the gap may have changed during it.
    this.clear();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(this.opts.client);
    this.client = client;
    client.on('notification', (msg) => this.onNotice(msg.payload));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${USER_CHANNEL}`);
    } catch (err) {
      this.lost(client, err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (this.closed || this.client !== client) return;
    this.attempts = 0;
    this.awaited = 0;
    this.beat();
    this.heartbeat = setInterval(() => this.beat(), this.heartbeatMs);
    this.heartbeat.unref();
  }

  /** Sends the next heartbeat; one still unanswered from the last tick means notices are not arriving. */
  private beat(): void {
    const client = this.client;
    if (!client) return;
    if (this.awaited !== 0) this.setLive(false);
    this.awaited = ++this.sent;
    client.query('SELECT pg_notify($1, $2)', [USER_CHANNEL, `heartbeat ${this.instance} ${this.sent}`]).catch((err: unknown) => {
      this.lost(client, err instanceof Error ? err : new Error(String(err)));
    });
  }

  private onNotice(payload: string | undefined): void {
    if (payload?.startsWith('heartbeat ')) {
      // Other instances' heartbeats arrive too: only this instance's latest counts.
      if (payload === `heartbeat ${this.instance} ${this.awaited}`) {
        this.awaited = 0;
        this.setLive(true);
      }
      return;
    }
    const row = parseRow(payload);
    if (row) this.evict(row[0], row[1]);
    else this.clear();
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.setLive(false);
    clearInterval(this.heartbeat);
    if (err) this.opts.onError?.(err);
    void client.end().catch(() => undefined);
    if (this.closed) return;
    this.reconnect = setTimeout(() => void this.connect(), reconnectDelay(++this.attempts));
    this.reconnect.unref();
  }
}

/** A row notice is the JSON array [tenant_id, id]; anything else (TRUNCATE's '*') clears everything. */
function parseRow(payload: string | undefined): [string, string] | undefined {
  if (!payload || payload[0] !== '[') return undefined;
  try {
    const value: unknown = JSON.parse(payload);
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string') return [value[0], value[1]];
  } catch {
    // fall through: an unreadable notice clears everything
  }
  return undefined;
}
