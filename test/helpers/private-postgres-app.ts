/**
 * The service on a private PostgreSQL cluster (helpers/postgres.ts, privatePostgres) that a test
 * may freeze, stop and start under it: migrated, started with fail-fast timeouts (1 s to connect,
 * 1 s per statement, as an operator would set them) and `env` on top. close() stops the app, then
 * removes the cluster.
 */
import { migratePostgres } from '../../src/storage/postgresql/migrate.js';
import { freePort, startTestApp, type TestApp } from './app.js';
import { privatePostgres, type PrivatePostgres } from './postgres.js';

export interface AppOnPrivatePostgres {
  server: PrivatePostgres;
  t: TestApp;
  close(): Promise<void>;
}

export async function appOnPrivatePostgres(env: Record<string, string> = {}): Promise<AppOnPrivatePostgres> {
  const server = await privatePostgres(await freePort());
  try {
    await migratePostgres(server.url);
    const t = await startTestApp({
      STORAGE_ADAPTER: 'postgresql',
      STORAGE_POSTGRESQL_URL: server.url,
      STORAGE_POSTGRESQL_CONNECT_TIMEOUT_MS: '1000',
      STORAGE_POSTGRESQL_STATEMENT_TIMEOUT_MS: '1000',
      ...env,
    });
    return {
      server,
      t,
      async close() {
        await t.close();
        await server.destroy();
      },
    };
  } catch (err) {
    await server.destroy();
    throw err;
  }
}
