/**
 * Redis connections (ioredis) tuned to fail fast: a request that needs Redis while it is down gets
 * a 503 within about a second instead of waiting for a reconnect, while the connection itself keeps
 * reconnecting with backoff in the background and the service recovers without a restart.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import { Unavailable } from '../../errors.js';

/**
 * ioredis is loaded with the first connection (REDIS_URL set), not at start: an instance without
 * Redis never needs its ~20 MB resident and ~0.2 s of loading (issue 17). It is CommonJS, so a
 * synchronous require keeps createRedis synchronous for its callers.
 */
const requireModule = createRequire(import.meta.url);
let RedisClient: typeof Redis | undefined;

/** Longest a single command may take before it counts as Redis being unavailable. */
export const COMMAND_TIMEOUT_MS = 1000;

/** Reconnect delays: 100 ms, 200 ms, ... capped at 2 s, forever (the service heals itself). */
export const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, 2000);

/** Tenants are a key segment: a ':' in one could address another tenant's keys. */
const TENANT_SEGMENT = /^[A-Za-z0-9_.-]{1,128}$/;

/** "<prefix>:<tenant>:", the start of every key of a tenant. */
export function tenantKeyPrefix(prefix: string, tenant: string): string {
  if (!TENANT_SEGMENT.test(tenant)) throw new Error(`invalid tenant for a Redis key: ${JSON.stringify(tenant)}`);
  return `${prefix}:${tenant}:`;
}

/** Connection for request-path commands: never queue, never wait for a reconnect. */
export function commandOptions(name: string): RedisOptions {
  return {
    connectionName: name,
    // While disconnected a command is rejected at once instead of sitting in the offline queue.
    enableOfflineQueue: false,
    // A command in flight when the connection drops is retried at most once, then rejected.
    maxRetriesPerRequest: 1,
    // A half-open socket (server frozen, network gone) must not hang the request either.
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: COMMAND_TIMEOUT_MS,
    retryStrategy: reconnectDelay,
    // Commands issued while the event loop handles a burst of requests go out as one pipeline:
    // one write and one read instead of one each per command (issue 17: Redis's CPU per userinfo
    // request fell by about two thirds, the service's by ~10%; docs/decisions.md).
    enableAutoPipelining: true,
  };
}

/**
 * Connection for SUBSCRIBE: nothing waits on it, so its commands may queue until the server is
 * back; ioredis then subscribes again to every channel it had (autoResubscribe).
 */
export function subscriberOptions(name: string): RedisOptions {
  return {
    connectionName: name,
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    autoResubscribe: true,
    connectTimeout: COMMAND_TIMEOUT_MS,
    retryStrategy: reconnectDelay,
  };
}

export function createRedis(url: string, options: RedisOptions): Redis {
  RedisClient ??= (requireModule('ioredis') as typeof import('ioredis')).Redis;
  const client = new RedisClient(url, options);
  // Connection errors are reported through commands (503) and readiness; without a listener
  // ioredis would print every failed reconnect attempt as an unhandled error event.
  client.on('error', () => {});
  return client;
}

/**
 * Server replies that mean "not now" rather than "wrong command": loading, a busy script, a replica
 * or cluster in transition, and a server that refuses writes for want of memory (OOM, under
 * `maxmemory` with `noeviction`), of a disk for its snapshots (MISCONF) or of replicas (NOREPLICAS).
 * Every other ReplyError (a script or type error) is a bug and stays a 500.
 */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|OOM|MISCONF|NOREPLICAS)\b/;

/** ioredis's own connectivity errors (connection closed, offline, command timeout). */
const CLIENT_UNAVAILABLE = /^(Connection is closed\.|Stream isn't writeable|Command timed out|connect ETIMEDOUT)/;
const CLIENT_UNAVAILABLE_NAMES = new Set(['MaxRetriesPerRequestError', 'AbortError', 'ClusterAllFailedError']);

/** True when err means Redis could not be reached or answered in time; anything else is a bug. */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return TRANSIENT_REPLY.test(err.message);
  if (CLIENT_UNAVAILABLE_NAMES.has(err.name) || CLIENT_UNAVAILABLE.test(err.message)) return true;
  // Socket errors (ECONNREFUSED, ECONNRESET, EPIPE, ...).
  const code = (err as NodeJS.ErrnoException).code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code);
}

/** Runs a Redis call; connectivity failures become the neutral Unavailable (a 503 at every surface). */
export async function redisCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (isRedisUnavailable(err)) throw new Unavailable('Redis is unavailable; retry shortly', 1, { cause: err });
    throw err;
  }
}

/** Round trip on a command connection, failing fast when Redis is down. */
export async function pingRedis(client: Redis): Promise<void> {
  await redisCall(() => client.ping());
}

/** Resolves true once the connection is ready, false after timeoutMs (start-up goes on degraded). */
export function waitReady(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.on('ready', onReady);
  });
}

/** QUIT, or drop the socket when Redis is not there to answer it. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}

/** A Lua script run by EVALSHA, loaded with EVAL the first time a server has not seen it. */
export class LuaScript {
  private readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Redis, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      // After a restart the script cache is empty; EVAL loads it again.
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return client.eval(this.source, keys.length, ...keys, ...args);
      throw err;
    }
  }
}
