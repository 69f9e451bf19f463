/**
 * How far V8 lets the old generation grow past what survived its last full collection (issue 17).
 *
 * V8 picks that factor itself, between 1.1 and 4, from how fast it collects against how fast the
 * program allocates: a process that allocates quickly is let grow up to four times its live size
 * before the next full collection. Tenant actors are short-lived objects that outlive a young-
 * generation collection (an actor evicted from a full pool of 50 lives ~20 ms under a Zipf stream
 * over 10,000 tenants), so a multi-tenant instance promotes garbage fast, and on a fast CPU V8 let
 * the resident set climb to ~815 MB and stay there over a 4-minute window, against ~150 MB live
 * (bench:capacity, 10,000 tenants, pool 50, on an AMD Zen 5 VM; 398-452 MB on a slower Intel one).
 *
 * A fixed factor of 1.5 (`--heap-growing-percent=50`) keeps the peak at ~440 MB in the same run for
 * ~1.5% more CPU per request, within that run's noise (docs/decisions.md, "Heap growth"). V8 reads
 * the flag at every full collection, so setting it before the service starts is enough; it is not
 * allowed in NODE_OPTIONS, so an operator who wants another factor passes it on the command line
 * (`node --heap-growing-percent=N dist/src/main.js`), and that one is kept.
 */
import { setFlagsFromString } from 'node:v8';

/** The old generation may grow to 1.5 times what survived the last full collection. */
export const HEAP_GROWING_PERCENT = 50;

const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/** The flag to set, or undefined when the process was started with one of its own. */
export function heapGrowthFlag(execArgv: readonly string[]): string | undefined {
  return execArgv.some((arg) => FLAG.test(arg)) ? undefined : `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
}

/** Sets the factor for this process unless its command line already did. Returns the flag set. */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): string | undefined {
  const flag = heapGrowthFlag(execArgv);
  if (flag) setFlagsFromString(flag);
  return flag;
}
