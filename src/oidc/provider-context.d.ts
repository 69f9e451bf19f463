/**
 * oidc-provider 9 keeps each request's context in one AsyncLocalStorage of its own
 * (lib/helpers/als.js: `Provider.ctx` reads it). The package has no exports map, so the module can
 * be imported by path; request-scope.ts only disables it between requests.
 * test/oidc/request-scope.test.ts fails if an upgrade moves it.
 */
declare module 'oidc-provider/lib/helpers/als.js' {
  import type { AsyncLocalStorage } from 'node:async_hooks';

  const providerContext: AsyncLocalStorage<unknown>;
  export default providerContext;
}
