/**
 * The Redis side of the service when REDIS_URL is set: one fail-fast command connection shared by
 * the OIDC artefacts and the rate limiter (the event bus keeps its own two, see events/redis-bus.ts).
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { closeRedis, commandOptions, createRedis, pingRedis, waitReady } from './client.js';
import { RedisOidcPayloads } from './oidc-payloads.js';
import { reasonOf, redactUrl } from '../../startup-errors.js';

/** How long start-up waits for a first connection before going on degraded (readiness says so). */
const FIRST_CONNECT_MS = 3000;

export interface RedisServices {
  /** Command connection (OIDC artefacts, rate-limit counters). */
  readonly client: Redis;
  readonly oidc: RedisOidcPayloads;
  /** Resolves when the command connection and every probe (the event bus) answer; 503 otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenRedisOptions {
  log: Logger;
  /** Further connections readiness depends on (the event bus). */
  probes?: Array<() => Promise<void>>;
  /** First key segment (default `svc`). */
  prefix?: string;
}

export async function openRedis(url: string, opts: OpenRedisOptions): Promise<RedisServices> {
  const client = createRedis(url, commandOptions('svc'));
  // One line when the connection goes and one when it is back, not one per reconnect attempt.
  let connected = false;
  let lost = false;
  let closing = false;
  client.on('ready', () => {
    if (lost) opts.log.info('redis connection restored');
    connected = true;
    lost = false;
  });
  client.on('close', () => {
    if (connected && !closing) opts.log.warn('redis connection lost; reconnecting with backoff');
    lost ||= connected;
    connected = false;
  });
  let lastError: unknown;
  const remember = (err: unknown) => {
    lastError = err;
  };
  client.on('error', remember);
  if (!(await waitReady(client, FIRST_CONNECT_MS))) {
    // Not fatal: requests needing Redis answer 503 and /readyz reports it until it connects.
    // Issue 18 item 11: the line names the setting and why the connection failed.
    const reason = lastError === undefined ? 'no answer' : reasonOf(lastError);
    opts.log.error({ redis: redactUrl(url), setting: 'REDIS_URL', reason }, `redis at ${redactUrl(url)} (REDIS_URL) is not reachable: ${reason}; starting degraded`);
  }
  client.off('error', remember);
  const probes = opts.probes ?? [];
  return {
    client,
    oidc: new RedisOidcPayloads(client, { prefix: opts.prefix }),
    async ping() {
      await Promise.all([pingRedis(client), ...probes.map((p) => p())]);
    },
    close: () => {
      closing = true;
      return closeRedis(client);
    },
  };
}


