/**
 * EventBus over Redis pub/sub, shared by every instance (CONTRACT.md: key rotation events on
 * `svc:<tenant>:jwks:rotated`). Two connections, because a connection in subscriber mode can do
 * nothing else: the publisher fails fast like any request-path command; the subscriber queues its
 * PSUBSCRIBEs while Redis is away and ioredis subscribes again to every pattern after a reconnect.
 *
 * Pub/sub is at-most-once: an event published while this instance was disconnected is lost.
 * Storage is the source of truth (see keys/rotation.ts), so onReconnect lets the owner of the
 * subscriptions re-read what it may have missed.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Unavailable } from '../errors.js';
import { closeRedis, commandOptions, createRedis, pingRedis, redisCall, subscriberOptions, waitReady } from '../storage/redis/client.js';
import type { BusErrorHandler, EventBus } from './bus.js';

type PatternHandler = (channel: string, payload: unknown) => void;

export class RedisEventBus implements EventBus {
  readonly origin = randomUUID();
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly patternHandlers = new Map<string, Set<PatternHandler>>();
  private readonly reconnectListeners = new Set<() => void>();
  private closed = false;

  constructor(
    url: string,
    private readonly onError: BusErrorHandler = () => {},
  ) {
    this.publisher = createRedis(url, commandOptions('svc-bus-pub'));
    this.subscriber = createRedis(url, subscriberOptions('svc-bus-sub'));
    this.subscriber.on('pmessage', (pattern: string, channel: string, message: string) => this.deliverPattern(pattern, channel, message));
    let connectedBefore = false;
    this.subscriber.on('ready', () => {
      if (connectedBefore) for (const listener of this.reconnectListeners) listener();
      connectedBefore = true;
    });
  }

  /** Calls listener each time the subscriber connection is back after a loss (not the first time). */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  async publish(channel: string, payload: object): Promise<void> {
    if (this.closed) throw new Error('event bus is closed');
    await redisCall(() => this.publisher.publish(channel, JSON.stringify(payload)));
  }

  /**
   * Calls handler with every payload on a channel matching pattern (PSUBSCRIBE; ioredis subscribes
   * again after a reconnect); returns the unsubscribe function, which PUNSUBSCRIBEs with the last
   * handler of the pattern.
   */
  subscribePattern(pattern: string, handler: PatternHandler): () => void {
    let set = this.patternHandlers.get(pattern);
    if (!set) {
      set = new Set();
      this.patternHandlers.set(pattern, set);
      this.subscriber.psubscribe(pattern).catch((err: unknown) => {
        if (!this.closed) this.onError(err, pattern);
      });
    }
    const entry: PatternHandler = (c, p) => handler(c, p);
    set.add(entry);
    return () => {
      const current = this.patternHandlers.get(pattern);
      if (!current?.delete(entry) || current.size) return;
      this.patternHandlers.delete(pattern);
      if (!this.closed) this.subscriber.punsubscribe(pattern).catch((err: unknown) => this.onError(err, pattern));
    };
  }

  private deliverPattern(pattern: string, channel: string, message: string): void {
    const set = this.patternHandlers.get(pattern);
    if (!set) return;
    for (const handler of set) {
      try {
        handler(channel, JSON.parse(message) as unknown);
      } catch (err) {
        this.onError(err, channel);
      }
    }
  }

  /** Resolves true once both connections are up, false after timeoutMs. */
  async ready(timeoutMs: number): Promise<boolean> {
    const [pub, sub] = await Promise.all([waitReady(this.publisher, timeoutMs), waitReady(this.subscriber, timeoutMs)]);
    return pub && sub;
  }

  /** Both connections usable: the publisher answers and the subscriber is connected. */
  async ping(): Promise<void> {
    await pingRedis(this.publisher);
    if (this.subscriber.status !== 'ready') throw new Unavailable(`Redis subscriber connection is ${this.subscriber.status}`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.patternHandlers.clear();
    this.reconnectListeners.clear();
    await Promise.all([closeRedis(this.publisher), closeRedis(this.subscriber)]);
  }
}
