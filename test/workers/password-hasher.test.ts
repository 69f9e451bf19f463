/**
 * The real Piscina pool and Argon2 worker. The task file is loaded from dist/ (`npm test` builds
 * first; run `npm run build` before running this file on its own).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Unavailable } from '../../src/errors.js';
import { toProblem } from '../../src/http/problem.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { PasswordHasher } from '../../src/workers/password-hasher.js';

const DEFAULTS = { memory_cost: 19456, time_cost: 2, parallelism: 1 };

describe('PasswordHasher', () => {
  const config = loadConfig({ NODE_ENV: 'test', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false' });
  const metrics = new Metrics(config);
  const hasher = PasswordHasher.fromConfig(config, metrics);
  afterAll(() => hasher.close());

  it('hashes with Argon2id at the configured cost and verifies the round trip', async () => {
    const hash = await hasher.hash('correct horse battery staple');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(hash).not.toContain('correct horse');
    expect(await hasher.verify(hash, 'correct horse battery staple')).toBe(true);
  });

  it('rejects a wrong password and a malformed hash', async () => {
    const hash = await hasher.hash('s3cret-password');
    expect(await hasher.verify(hash, 's3cret-passwore')).toBe(false);
    expect(await hasher.verify(hash, '')).toBe(false);
    expect(await hasher.verify('not-a-phc-string', 's3cret-password')).toBe(false);
  });

  it('salts every hash', async () => {
    const [a, b] = await Promise.all([hasher.hash('same password'), hasher.hash('same password')]);
    expect(a).not.toBe(b);
  });

  it('records task durations per task', async () => {
    await hasher.verify(await hasher.hash('metrics please'), 'metrics please');
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/worker_task_duration_seconds_count\{task="argon2_hash"\} [1-9]/);
    expect(text).toMatch(/worker_task_duration_seconds_count\{task="argon2_verify"\} [1-9]/);
    expect(text).toMatch(/worker_pool_queue_depth 0/);
  });

  it('answers 503 with Retry-After once the bounded queue is full, and still serves the admitted tasks', async () => {
    // One thread, one waiting slot: of five simultaneous tasks, two are admitted.
    const tiny = new PasswordHasher({ argon2: DEFAULTS, threads: 1, maxQueue: 1 });
    try {
      const results = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => tiny.hash(`password-${i}`)));
      const ok = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(ok).toHaveLength(2);
      expect(refused).toHaveLength(3);
      for (const r of refused) {
        expect(r.reason).toBeInstanceOf(Unavailable);
        expect(toProblem(r.reason)).toMatchObject({ status: 503, type: 'urn:svc:error:unavailable' });
        expect(toProblem(r.reason)?.extra.headers).toEqual({ 'retry-after': '1' });
      }
      // Capacity comes back once the queue drains.
      await expect(tiny.hash('after the burst')).resolves.toMatch(/^\$argon2id\$/);
    } finally {
      await tiny.close();
    }
  });

  it('refuses work after close', async () => {
    const h = new PasswordHasher({ argon2: DEFAULTS, threads: 1, maxQueue: 1 });
    await h.hash('warm up');
    await h.close();
    await expect(h.hash('too late')).rejects.toBeInstanceOf(Unavailable);
  });
});
