/**
 * Two projects, one run (`npm test` = `vitest run`):
 *
 * - `sqlite`: every test file except those only the production backend has.
 * - `postgresql`: the files that reach storage through the running service (test/smoke.test.ts and
 *   test/e2e/**) once more, now on PostgreSQL + Redis (SVC_TEST_BACKEND=postgresql: each app gets a
 *   migrated database of its own and its own Redis key prefix, test/helpers/app.ts), plus the
 *   production-backend-only files (PostgreSQL/Redis repositories, fault and two-instance tests).
 *
 * The long browser walks run once, not twice (BROWSER_WALKS below). A walk proves pages and flows,
 * whose code is the same on both backends; what the backends do differently is held by the storage
 * contract (test/storage/contract.ts, run on both), by every non-browser e2e file (run on both,
 * signing in over HTTP through the same interaction pages) and by the *-postgresql browser files.
 * The walks are divided so that each backend sees sign-in, MFA, social login, sign-up and the
 * account or console pages in a real browser. CI time: ~750 s of fork time saved per run.
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
/** Browser walks that run once, each on the backend named here (see the header). */
const e2e = (names: string[]) => names.map((n) => `test/e2e/${n}.test.ts`);
const BROWSER_WALKS = {
  /**
   * On SQLite (the embedded default): the page-rendering files (languages, provider marks, the
   * walkthrough's polish), password reset, mail off, hostile and preset social logins, the account
   * page, the web, native and resource sign-ins, the console's edits keeping what forms do not
   * show, the account page's refused forms, and the logout pages (no session, languages, errors).
   */
  sqlite: e2e(['languages', 'social-marks', 'social-platform-secret', 'pages-polish', 'password-reset', 'mail-unavailable', 'social-hostile', 'social-facebook', 'social-github', 'account-page', 'signin-web', 'signin-native', 'resources-user-flow', 'id-token-claims', 'pairwise', 'account-page-policy', 'logout-stay', 'admin-console-edits', 'account-refused-forms', 'logout-pages']),
  /**
   * On PostgreSQL + Redis (production): social login with a real upstream, passkeys, sign-up, TOTP,
   * the admin console, the SPA with silent renewal, logout (and a hint for another user), the
   * device flow and security alerts.
   */
  postgresql: e2e(['social-oidc', 'passkeys', 'signup', 'mfa', 'admin-console', 'signin-spa', 'logout', 'logout-hint', 'device-flow', 'security-alerts']),
};

export default defineConfig({
  test: {
    // Native addons (uWS, better-sqlite3) are safest in child processes.
    pool: 'forks',
    // isolate: false: a fork keeps its module cache from one file to the next, so the service is
    // imported ~2 times per project instead of ~200 (collect phase 482 s -> 48 s of fork time).
    // It asks of every test file what each already does: close what it starts (apps, browsers,
    // servers), restore its spies and real timers, and leave process.env and globals as found.
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
    testTimeout: 30000,
    // it.concurrent (test/e2e/hostile/bodies.test.ts: one 413 per operation, each waiting out a 2 s lingering close).
    maxConcurrency: 32,
    hookTimeout: 60000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...PRODUCTION_BACKEND_ONLY, ...BROWSER_WALKS.postgresql], env: { SVC_TEST_BACKEND: 'sqlite' } },
      },
      {
        extends: true,
        test: { name: 'postgresql', include: [...THROUGH_THE_SERVICE, ...PRODUCTION_BACKEND_ONLY], exclude: [...configDefaults.exclude, ...BROWSER_WALKS.sqlite], env: { SVC_TEST_BACKEND: 'postgresql' } },
      },
    ],
  },
});
