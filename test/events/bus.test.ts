import { describe, expect, it } from 'vitest';
import { InProcessBus, rotationChannel } from '../../src/events/bus.js';
import { SerialTask } from '../../src/events/serial-task.js';
import { onChannel } from '../helpers/bus.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('InProcessBus', () => {
  it('delivers a copy to subscribers of the channel only, after publish returns, until unsubscribed', async () => {
    const errors: unknown[] = [];
    const bus = new InProcessBus((err) => errors.push(err));
    const got: unknown[] = [];
    const payload = { tenant: 'acme', kids: ['k1'], promoted: 1, at: '2026-01-01T00:00:00.000Z' };
    const off = onChannel(bus, rotationChannel('acme'), (p) => got.push(p));
    onChannel(bus, rotationChannel('acme'), () => {
      throw new Error('bad subscriber');
    });
    onChannel(bus, rotationChannel('other'), (p) => got.push(['other', p]));
    await bus.publish('svc:acme:jwks:rotated', payload);
    expect(got).toEqual([]); // not inside the publisher's call
    await tick();
    expect(got).toEqual([payload]);
    expect(got[0]).not.toBe(payload);
    expect(errors).toHaveLength(1);
    off();
    await bus.publish(rotationChannel('acme'), payload);
    await tick();
    expect(got).toHaveLength(1);
    await bus.close();
    await expect(bus.publish(rotationChannel('acme'), payload)).rejects.toThrow(/closed/);
  });
});

describe('SerialTask', () => {
  it('never runs the job twice at once and coalesces triggers during a run into one more run', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const gates: Array<() => void> = [];
    const task = new SerialTask(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs++;
      await new Promise<void>((r) => gates.push(r));
      running--;
    });
    const first = task.run();
    const later = [task.run(), task.run(), task.run()];
    expect(later[0]).toBe(later[2]);
    gates.shift()!();
    await first;
    await tick();
    gates.shift()!();
    await Promise.all(later);
    expect(runs).toBe(2);
    expect(maxRunning).toBe(1);
  });

  it('lets a failed run reject its callers without blocking the next one', async () => {
    let fail = true;
    const task = new SerialTask(async () => {
      if (fail) throw new Error('boom');
    });
    await expect(task.run()).rejects.toThrow('boom');
    fail = false;
    await expect(task.run()).resolves.toBeUndefined();
  });
});
