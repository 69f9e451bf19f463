/**
 * ClearPairs (src/oidc/clear-pairs.ts): which client and address pairs the client-authentication
 * throttle may answer without reading its Redis counters. A pair is clear only from a read that
 * found it under the limits until a failure of its client is heard of, the bus reconnects, or its
 * time runs out; bounded memory never revives a pair a failure invalidated.
 */
import { describe, expect, it } from 'vitest';
import { ClearPairs } from '../../src/oidc/clear-pairs.js';

const NOW = 1_000_000;

function marked(pairs: ClearPairs, tenant: string, client: string, ip: string, now = NOW): void {
  pairs.mark(tenant, client, ip, pairs.ticket(), now);
}

describe('ClearPairs', () => {
  it('knows a pair only once a read found it clear, per tenant, client and address', () => {
    const pairs = new ClearPairs();
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW)).toBe(false);
    marked(pairs, 't', 'c', '10.0.0.1');
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW)).toBe(true);
    expect(pairs.isClear('t', 'c', '10.0.0.2', NOW)).toBe(false);
    expect(pairs.isClear('u', 'c', '10.0.0.1', NOW)).toBe(false);
    expect(pairs.isClear('t', 'd', '10.0.0.1', NOW)).toBe(false);
  });

  it('counts every address of a client again after a failure of that client, and only of that client', () => {
    const pairs = new ClearPairs();
    marked(pairs, 't', 'c', '10.0.0.1');
    marked(pairs, 't', 'c', '10.0.0.2');
    marked(pairs, 't', 'other', '10.0.0.1');
    marked(pairs, 'u', 'c', '10.0.0.1');
    pairs.clientFailed('t', 'c');
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW)).toBe(false);
    expect(pairs.isClear('t', 'c', '10.0.0.2', NOW)).toBe(false);
    expect(pairs.isClear('t', 'other', '10.0.0.1', NOW)).toBe(true);
    expect(pairs.isClear('u', 'c', '10.0.0.1', NOW)).toBe(true);
    // Read again after the failure and found under the limits: clear again.
    marked(pairs, 't', 'c', '10.0.0.1');
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW)).toBe(true);
  });

  it('a failure heard of while a read is under way wins over what the read found', () => {
    const pairs = new ClearPairs();
    const ticket = pairs.ticket(); // the read leaves for Redis
    pairs.clientFailed('t', 'c'); // another instance's failure arrives meanwhile
    pairs.mark('t', 'c', '10.0.0.1', ticket, NOW); // the read's answer: under the limits
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW)).toBe(false);
  });

  it('trusts a pair for its time only', () => {
    const pairs = new ClearPairs(60_000);
    marked(pairs, 't', 'c', '10.0.0.1');
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW + 59_999)).toBe(true);
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW + 60_000)).toBe(false);
    expect(pairs.size).toBe(0);
  });

  it('forgets everything on reset (the bus reconnected), reads under way included', () => {
    const pairs = new ClearPairs();
    marked(pairs, 't', 'c', '10.0.0.1');
    const ticket = pairs.ticket();
    pairs.reset();
    expect(pairs.isClear('t', 'c', '10.0.0.1', NOW)).toBe(false);
    pairs.mark('t', 'c', '10.0.0.2', ticket, NOW);
    expect(pairs.isClear('t', 'c', '10.0.0.2', NOW)).toBe(false);
    marked(pairs, 't', 'c', '10.0.0.3');
    expect(pairs.isClear('t', 'c', '10.0.0.3', NOW)).toBe(true);
  });

  it('holds at most its bound of pairs, the oldest dropped first', () => {
    const pairs = new ClearPairs(60_000, 3);
    for (const ip of ['1', '2', '3', '4']) marked(pairs, 't', 'c', ip);
    expect(pairs.size).toBe(3);
    expect(pairs.isClear('t', 'c', '1', NOW)).toBe(false);
    expect(pairs.isClear('t', 'c', '4', NOW)).toBe(true);
  });

  it('dropping a remembered failure for room does not make the pairs it invalidated clear again', () => {
    const pairs = new ClearPairs(60_000, 2);
    marked(pairs, 't', 'a', 'ip');
    pairs.clientFailed('t', 'a');
    pairs.clientFailed('t', 'b');
    pairs.clientFailed('t', 'c'); // 'a' is forgotten to make room
    expect(pairs.isClear('t', 'a', 'ip', NOW)).toBe(false);
    marked(pairs, 't', 'a', 'ip');
    expect(pairs.isClear('t', 'a', 'ip', NOW)).toBe(true);
  });
});
