/** lazyModule (src/lazy-module.ts): one load shared by every caller; a failed load is retried. */
import { describe, expect, it } from 'vitest';
import { lazyModule } from '../../src/lazy-module.js';

describe('lazyModule', () => {
  it('loads once, on the first call, and gives every caller the same module', async () => {
    let loads = 0;
    const get = lazyModule(async () => ({ n: ++loads }));
    expect(loads).toBe(0);
    const [a, b] = await Promise.all([get(), get()]);
    expect(a).toBe(b);
    expect(await get()).toBe(a);
    expect(loads).toBe(1);
  });

  it('does not keep a failed load: the next call tries again', async () => {
    let loads = 0;
    const get = lazyModule(async () => {
      loads++;
      if (loads === 1) throw new Error('transient');
      return { ok: true };
    });
    await expect(get()).rejects.toThrow('transient');
    await expect(get()).resolves.toEqual({ ok: true });
    expect(loads).toBe(2);
  });
});
