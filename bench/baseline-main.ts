/**
 * Process entry of the baseline server (run.ts spawns it; it can also be started by hand):
 *   BASELINE_PORT=4000 BASELINE_CLIENTS='[{"client_id":"a","client_secret":"...","alg":"RS256"}]' \
 *     node dist/bench/baseline-main.js
 * Optional BASELINE_RP='{"client_id","client_secret","redirect_uri"}' adds the relying party of the
 * refresh scenario (and devInteractions). Listens on BASELINE_HOST (default 127.0.0.1) and prints
 * one line "ready <url>" when listening. When spawned with an IPC channel it answers the bench's
 * event-loop delay probe (probes.ts), the counterpart of the product's metrics endpoint.
 */
import type { BaselineClient, BaselineRelyingParty } from './baseline-server.js';
import { startBaseline } from './baseline-server.js';
import { isSigningAlg } from './constants.js';
import { serveEventLoopProbe } from './probes.js';

function parseClients(raw: string | undefined): BaselineClient[] {
  if (!raw) throw new Error('BASELINE_CLIENTS is required (JSON array of {client_id, client_secret, alg})');
  const parsed: unknown = JSON.parse(raw);
  if (!Array.isArray(parsed) || parsed.length === 0) throw new Error('BASELINE_CLIENTS must be a non-empty JSON array');
  return parsed.map((item: unknown, i): BaselineClient => {
    if (!item || typeof item !== 'object') throw new Error(`BASELINE_CLIENTS[${i}] must be an object`);
    const { client_id, client_secret, alg } = item as Record<string, unknown>;
    if (typeof client_id !== 'string' || typeof client_secret !== 'string' || !isSigningAlg(alg)) {
      throw new Error(`BASELINE_CLIENTS[${i}] needs string client_id and client_secret and alg RS256|ES256|EdDSA`);
    }
    return { client_id, client_secret, alg };
  });
}

function parseRp(raw: string | undefined): BaselineRelyingParty | undefined {
  if (!raw) return undefined;
  const { client_id, client_secret, redirect_uri } = JSON.parse(raw) as Record<string, unknown>;
  if (typeof client_id !== 'string' || typeof client_secret !== 'string' || typeof redirect_uri !== 'string') {
    throw new Error('BASELINE_RP needs string client_id, client_secret and redirect_uri');
  }
  return { client_id, client_secret, redirect_uri };
}

async function main(): Promise<void> {
  const host = process.env.BASELINE_HOST ?? '127.0.0.1';
  const port = Number(process.env.BASELINE_PORT ?? '4000');
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error('BASELINE_PORT must be a port number');
  const server = await startBaseline(host, port, parseClients(process.env.BASELINE_CLIENTS), parseRp(process.env.BASELINE_RP));
  serveEventLoopProbe();
  const stop = () => server.close(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`ready http://${host}:${port}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`baseline: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
