/**
 * Structured logging (spec 1.6): JSON in production, pretty in development when
 * security.logging.pretty_print is on, and a copy to <file_logging.directory>/svc.log.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pino, { type Logger, type TransportTargetOptions } from 'pino';
import type { Config } from './config/index.js';

export type { Logger } from 'pino';

/** Fields that must never reach a log line, whatever object is logged. */
const REDACT = [
  'password', 'new_password', 'client_secret', 'token', 'access_token', 'refresh_token', 'id_token',
  'authorization', 'headers.authorization', 'headers.cookie', 'req.headers.authorization', 'req.headers.cookie',
  '*.password', '*.client_secret', '*.token', '*.authorization',
];

export function createLogger(config: Config): Logger {
  const { logging } = config.security;
  if (!logging.enabled) return pino({ level: 'silent' });

  const targets: TransportTargetOptions[] = [];
  const pretty = config.node_env === 'development' && logging.pretty_print;
  targets.push(
    pretty
      ? { target: 'pino-pretty', level: logging.level, options: { destination: 1, colorize: true, translateTime: 'SYS:standard' } }
      : { target: 'pino/file', level: logging.level, options: { destination: 1 } },
  );
  if (logging.file_logging.enabled) {
    const dir = resolve(logging.file_logging.directory);
    mkdirSync(dir, { recursive: true });
    targets.push({ target: 'pino/file', level: logging.level, options: { destination: join(dir, 'svc.log'), mkdir: true } });
  }
  return pino(
    { level: logging.level, base: { service: 'svc' }, redact: { paths: REDACT, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.transport({ targets }),
  );
}
