/**
 * One channel's payloads, through the bus API the product uses (subscribePattern: the tenant
 * actors listen per kind of event, tenancy/tenant-events.ts): the channel as a pattern that
 * matches only itself.
 */
import type { EventBus } from '../../src/events/bus.js';

export function onChannel(bus: Pick<EventBus, 'subscribePattern'>, channel: string, handler: (payload: unknown) => void): () => void {
  const literal = channel.replace(/[\\*?[\]^]/g, (c) => `\\${c}`);
  return bus.subscribePattern(literal, (_channel, payload) => handler(payload));
}
