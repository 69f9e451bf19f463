/** The Argon2 threads run at a lower priority (workers.argon2_nice); the event loop thread keeps its own. */
import { readFileSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { PasswordHasher } from '../../src/workers/password-hasher.js';

const PARAMS = { memory_cost: 1024, time_cost: 1, parallelism: 1 };

/** Nice value of every thread of this process (Linux keeps one per thread), from /proc. */
function threadNices(): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]); // field 19 (nice), counted from field 3
  });
}

let hasher: PasswordHasher | undefined;
afterEach(async () => hasher?.close());

describe.runIf(process.platform === 'linux')('Argon2 thread priority', () => {
  it('lowers the priority of the worker threads only', async () => {
    const before = threadNices().filter((n) => n === 7).length;
    hasher = new PasswordHasher({ argon2: PARAMS, threads: 2, maxQueue: 10, nice: 7 });
    const hash = await hasher.hash('a password');
    await Promise.all([hasher.verify(hash, 'a password'), hasher.verify(hash, 'a password')]);
    expect(threadNices().filter((n) => n === 7).length - before).toBeGreaterThanOrEqual(1);
    // This (the event loop's) thread is untouched.
    const self = readFileSync('/proc/thread-self/stat', 'utf8');
    expect(Number(self.slice(self.lastIndexOf(')') + 2).split(' ')[16])).not.toBe(7);
  });
});
