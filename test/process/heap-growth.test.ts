/**
 * The service's heap growth factor (src/heap-growth.ts): set to 1.5 unless the process was started
 * with its own, and really acted on by V8. The built module is run in child processes (as main.js
 * runs it), on a workload that promotes garbage to the old generation quickly, the way tenant
 * actors churning through a full pool do: with the service's factor V8 collects the old generation
 * several times as often as with a factor of 4 given on the command line, which must be kept.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, heapGrowthFlag } from '../../src/heap-growth.js';

const MODULE = fileURLToPath(new URL('../../dist/src/heap-growth.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'svc-heap-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CHURN = `
import { PerformanceObserver, constants } from 'node:perf_hooks';
const { limitHeapGrowth } = await import(process.argv[2]);
const set = limitHeapGrowth();
let major = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
}).observe({ entryTypes: ['gc'] });
// A live set that stays, and objects that outlive a young-generation collection before they die.
const live = Array.from({ length: 300_000 }, (_, i) => ({ i, s: 'x'.repeat(64) + i }));
const ring = new Array(300_000);
for (let i = 0; i < 3_000_000; i++) ring[i % ring.length] = { i, a: [i, i + 1, i + 2], s: 'y' + i };
await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify({ set: set ?? null, major, live: live.length }));
`;

const script = join(dir, 'churn.mjs');
writeFileSync(script, CHURN);

async function churn(nodeArgs: string[]): Promise<{ set: string | null; major: number }> {
  const { stdout } = await promisify(execFile)(process.execPath, [...nodeArgs, script, MODULE], { timeout: 60_000 });
  return JSON.parse(stdout) as { set: string | null; major: number };
}

describe('heap growth factor', () => {
  it('is set unless the command line names one, in either spelling', () => {
    expect(heapGrowthFlag([])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    expect(heapGrowthFlag(['--max-old-space-size=512', '--enable-source-maps'])).toBe('--heap-growing-percent=50');
    expect(heapGrowthFlag(['--heap-growing-percent=100'])).toBeUndefined();
    expect(heapGrowthFlag(['--heap_growing_percent=20'])).toBeUndefined();
    // A different flag that merely starts alike is not the operator's choice of this one.
    expect(heapGrowthFlag(['--heap-growing-percentage-x=1'])).toBe('--heap-growing-percent=50');
  });

  it("is acted on by V8, and an operator's own factor on the command line is kept", async () => {
    const [service, operator] = await Promise.all([churn([]), churn(['--heap-growing-percent=300'])]);
    expect(service.set).toBe('--heap-growing-percent=50');
    expect(operator.set).toBeNull();
    expect(operator.major).toBeGreaterThan(0);
    // Measured 6 against 2 full collections: the old generation was kept smaller.
    expect(service.major).toBeGreaterThanOrEqual(2 * operator.major);
  }, 60_000);
});
