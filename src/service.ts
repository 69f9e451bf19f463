/** The service's run (main.ts loads it): parse config (stop with the setting's name on error), start, drain on signals. */
import { startApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { limitHeapGrowth } from './heap-growth.js';

// The old generation's growth between full collections (V8 reads the flag at each one).
limitHeapGrowth();

/** A setting refused: each problem on a line of its own, exit 78 (EX_CONFIG). */
function refuseConfiguration(err: ConfigError): never {
  for (const p of err.problems) process.stderr.write(`configuration error: ${p}\n`);
  process.exit(78);
}

export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) refuseConfiguration(err);
    throw err;
  }
  // Some settings can only be checked by using them (the log directory is created and written).
  const app = await startApp(config).catch((err: unknown) => {
    if (err instanceof ConfigError) refuseConfiguration(err);
    throw err;
  });
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

