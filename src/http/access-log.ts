/**
 * The access log (issue 17): at most one `request` line per request, at info, written only when
 * `security.logging.access_log` asks for it (`all`, or `sampled` at `access_log_sample_rate`).
 * Off by default outside development: with production defaults a line per request cost more CPU
 * than a token request and filled disks (3 million lines in 7 minutes of load). Health probes,
 * metrics scrapes and static assets (stylesheet, console assets, favicon) never get a line: they
 * are polled or fetched with every page and say nothing about what users do.
 */
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';

export type AccessLogMode = 'off' | 'sampled' | 'all';

export interface AccessLine {
  req_id: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  ip: () => string;
  /** Why a request was refused (a 4xx's detail), when known. */
  reason?: string | undefined;
}

export function accessLogMode(config: Config): AccessLogMode {
  return config.security.logging.access_log ?? (config.node_env === 'development' ? 'all' : 'off');
}

/** Paths that never get a line, whatever the mode. */
export function isQuietPath(path: string, quiet: ReadonlySet<string>, assetPrefixes: readonly string[]): boolean {
  if (quiet.has(path)) return true;
  for (const prefix of assetPrefixes) if (path.startsWith(prefix)) return true;
  return false;
}

export interface AccessLogOptions {
  /** Exact paths without a line (probes, metrics, stylesheet, favicon). */
  quietPaths: Iterable<string>;
  /** Path prefixes of static assets. */
  assetPrefixes: readonly string[];
  /** For tests: the sampling draw. */
  random?: () => number;
}

/** A writer for one line per request, or undefined when nothing would ever be written (no cost at all then). */
export function accessLogger(config: Config, log: Logger, opts: AccessLogOptions): ((line: AccessLine) => void) | undefined {
  const mode = accessLogMode(config);
  if (mode === 'off' || !config.security.logging.enabled) return undefined;
  const rate = mode === 'all' ? 1 : config.security.logging.access_log_sample_rate;
  const random = opts.random ?? Math.random;
  const quiet = new Set(opts.quietPaths);
  return (line) => {
    if (!log.isLevelEnabled('info') || isQuietPath(line.path, quiet, opts.assetPrefixes)) return;
    if (rate < 1 && random() >= rate) return;
    const fields: Record<string, unknown> = { req_id: line.req_id, method: line.method, path: line.path, status: line.status, ms: line.ms, ip: line.ip() };
    if (line.reason !== undefined) fields.reason = line.reason;
    if (rate < 1) fields.sample_rate = rate;
    log.info(fields, 'request');
  };
}
