/** The service's run (main.ts loads it): parse config (stop with the setting's name on error), start, drain on signals. */
import { startApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { limitHeapGrowth } from './heap-growth.js';

// The old generation's growth between full collections (V8 reads the flag at each one).
limitHeapGrowth();

export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`configuration error: ${p}\n`);
      process.exit(78);
    }
    throw err;
  }
  const app = await startApp(config);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.ctx.log.info({ signal }, 'shutting down: draining in-flight requests');
    const force = setTimeout(() => process.exit(1), 15000);
    force.unref();
    app.close().then(
      () => setTimeout(() => process.exit(0), 100),
      (err: unknown) => {
        app.ctx.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

