/**
 * Two projects, one run (`npm test` = `vitest run`):
 *
 * - `sqlite`: every test file except those only the production backend has.
 * - `postgresql`: the files that reach storage through the running service (test/smoke.test.ts and
 *   test/e2e/**) once more, now on PostgreSQL + Redis (SVC_TEST_BACKEND=postgresql: each app gets a
 *   migrated database of its own and its own Redis key prefix, test/helpers/app.ts), plus the
 *   production-backend-only files (PostgreSQL/Redis repositories, fault and two-instance tests),
 *   except the few files that only check how pages render (RENDERING_ONLY).
 *
 * Backend-only files are named for their backend: `*postgresql*`, `*redis*`, `two-instances`
 * (PostgreSQL + Redis); `sqlite*` and the other files under test/storage, test/keys, ... use SQLite
 * or no storage at all, so running them twice would prove nothing new. Nothing is skipped: a file
 * that does not belong to a project is not included in it.
 * `vitest run --project sqlite` or `--project postgresql` runs one side.
 */
import { configDefaults, defineConfig } from 'vitest/config';

const PRODUCTION_BACKEND_ONLY = ['test/**/*postgresql*.test.ts', 'test/**/*redis*.test.ts', 'test/e2e/two-instances.test.ts'];
const THROUGH_THE_SERVICE = ['test/smoke.test.ts', 'test/e2e/**/*.test.ts'];
/**
 * Browser files about how pages render (languages, provider marks, the walkthrough's polish), which
 * read and write nothing the other e2e files do not already take through PostgreSQL + Redis: run
 * once, on SQLite (CI time: ~100 s of a fork's time each run saved).
 */
const RENDERING_ONLY = ['test/e2e/languages.test.ts', 'test/e2e/social-marks.test.ts', 'test/e2e/pages-polish.test.ts'];

export default defineConfig({
  test: {
    // Native addons (uWS, better-sqlite3) are safest in child processes.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 30000,
    // it.concurrent (test/e2e/hostile/bodies.test.ts: one 413 per operation, each waiting out a 2 s lingering close).
    maxConcurrency: 32,
    hookTimeout: 60000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...PRODUCTION_BACKEND_ONLY], env: { SVC_TEST_BACKEND: 'sqlite' } },
      },
      {
        extends: true,
        test: { name: 'postgresql', include: [...THROUGH_THE_SERVICE, ...PRODUCTION_BACKEND_ONLY], exclude: [...configDefaults.exclude, ...RENDERING_ONLY], env: { SVC_TEST_BACKEND: 'postgresql' } },
      },
    ],
  },
});
