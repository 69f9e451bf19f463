/**
 * Event bus between the parts of one instance and, with Redis, between instances (spec 6,
 * CONTRACT.md). The interface is the shape of Redis pub/sub: publish a JSON payload on a channel,
 * subscribe to a pattern of channels with a handler, unsubscribe with the returned function. Only
 * patterns: the tenant actors listen to one kind of event for every tenant at once
 * (tenancy/tenant-events.ts), and nothing in the product subscribes to a single channel.
 * InProcessBus is the default (single instance, no Redis); RedisEventBus plugs in behind the same
 * interface.
 */
import { randomUUID } from 'node:crypto';

export interface EventBus {
  /**
   * This bus's own id (one per instance): a publisher of a change this instance has applied already
   * names it in the payload (ConfigChangedEvent.origin), so the instance skips its own echo.
   */
  readonly origin: string;
  /** Hands the payload over for delivery; resolves before subscribers have handled it. */
  publish(channel: string, payload: object): Promise<void>;
  /**
   * Calls handler with every payload published on a channel matching pattern (Redis PSUBSCRIBE
   * glob; build patterns with channelPattern so only `*` is special); returns the unsubscribe function.
   */
  subscribePattern(pattern: string, handler: (channel: string, payload: unknown) => void): () => void;
  close(): Promise<void>;
}

/** A Redis glob pattern for `<prefix>:*:<suffix>`: the prefix and suffix match literally. */
export function channelPattern(prefix: string, suffix: string): string {
  const literal = (s: string) => s.replace(/[\\*?[\]^]/g, (c) => `\\${c}`);
  return `${literal(prefix)}:*:${literal(suffix)}`;
}

/** The glob semantics of channelPattern's patterns, for the in-process bus. */
export function patternMatcher(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) re += escapeRegExp(pattern[++i]!);
    else if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else re += escapeRegExp(c);
  }
  return new RegExp(`^${re}$`, 's');
}

const escapeRegExp = (c: string) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Channel of a tenant's signing-key changes (CONTRACT.md: `svc:<tenant>:jwks:rotated`; the first
 * segment is `redis.key_prefix`, default `svc`).
 */
export const rotationChannel = (tenant: string, prefix = 'svc'): string => `${prefix}:${tenant}:jwks:rotated`;

/**
 * Channel of a tenant's client changes (`<prefix>:<tenant>:client:changed`): every instance drops
 * the client from its actor's cache, so an update, a deactivation, a deletion or a new secret made
 * through one instance is in force on all of them at once.
 */
export const clientChangedChannel = (tenant: string, prefix = 'svc'): string => `${prefix}:${tenant}:client:changed`;

/** Payload on clientChangedChannel. */
export interface ClientChangedEvent {
  tenant: string;
  client_id: string;
  /** ISO 8601 time of the change. */
  at: string;
}

/**
 * Channel of a tenant's failed client authentications (`<prefix>:<tenant>:client:auth-failed`):
 * every instance's throttle counts that client's address pairs again on their next request
 * (oidc/clear-pairs.ts).
 */
export const clientAuthFailedChannel = (tenant: string, prefix = 'svc'): string => `${prefix}:${tenant}:client:auth-failed`;

/** Payload on clientAuthFailedChannel: which client failed to authenticate (never the secret tried, nor the address). */
export interface ClientAuthFailedEvent {
  tenant: string;
  client_id: string;
}

/**
 * Channel of a tenant's configuration overrides (`<prefix>:<tenant>:config:changed`): every
 * instance's live actor of the tenant re-reads its overrides and rebuilds what depends on them.
 */
export const configChangedChannel = (tenant: string, prefix = 'svc'): string => `${prefix}:${tenant}:config:changed`;

/** Payload on configChangedChannel: which section changed (never its values). */
export interface ConfigChangedEvent {
  tenant: string;
  section: string;
  /** ISO 8601 time of the change. */
  at: string;
  /** The publishing instance's EventBus.origin when that instance applied the change before publishing. */
  origin?: string;
}

/** Payload on rotationChannel (CONTRACT.md): `kids` are the keys the change affected. */
export interface JwksRotatedEvent {
  tenant: string;
  kids: string[];
  /** How many new keys were promoted (0 for a retirement or a mark). */
  promoted: number;
  /** ISO 8601 time of the change. */
  at: string;
}

export type BusErrorHandler = (err: unknown, channel: string) => void;

export class InProcessBus implements EventBus {
  readonly origin = randomUUID();
  private readonly patterns = new Set<{ match: RegExp; listener: (channel: string, message: string) => void }>();
  private closed = false;

  constructor(private readonly onError: BusErrorHandler = () => {}) {}

  async publish(channel: string, payload: object): Promise<void> {
    if (this.closed) throw new Error('event bus is closed');
    // Serialised like a Redis message, and delivered on a later turn like one: subscribers get
    // their own copy and never run inside the publisher's call stack.
    const message = JSON.stringify(payload);
    setImmediate(() => {
      if (this.closed) return;
      for (const p of this.patterns) if (p.match.test(channel)) p.listener(channel, message);
    });
  }

  subscribePattern(pattern: string, handler: (channel: string, payload: unknown) => void): () => void {
    const entry = {
      match: patternMatcher(pattern),
      listener: (channel: string, message: string) => {
        try {
          handler(channel, JSON.parse(message) as unknown);
        } catch (err) {
          this.onError(err, channel);
        }
      },
    };
    this.patterns.add(entry);
    return () => {
      this.patterns.delete(entry);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.patterns.clear();
  }
}
