import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Native addons (uWS, better-sqlite3) are safest in child processes.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 30000,
    hookTimeout: 60000,
    reporters: ['default'],
  },
});
