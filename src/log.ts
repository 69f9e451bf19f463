/**
 * Structured logging (spec 1.6), one factory for the service and the CLI so every line has the same
 * shape (`level`, ISO `time`, `service`, `msg`, redacted secrets):
 * - JSON everywhere, except pretty lines in development when `security.logging.pretty_print` is on
 *   AND stdout is a terminal (a redirected stdout or a file never gets colour codes);
 * - the service writes through one pino transport (a worker thread): the event loop serialises a
 *   line once and hands it over; the worker copies it to stdout and, with file logging on, to
 *   `<file_logging.directory>/svc.log` (issue 17: never two synchronous writes per line);
 * - a sink that cannot be written (a full disk, a stdout whose reader went away) never stops the
 *   service: workers/log-target.ts keeps, drops and retries, and says so on stderr; should the
 *   transport's worker itself end, the lines go on to stdout from the main thread (`survive`);
 * - the CLI writes the same shape synchronously to stderr (short-lived, keeps stdout for output).
 */
import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pino, { type DestinationStream, type Level, type Logger, type LoggerOptions, type TransportTargetOptions } from 'pino';
import { ConfigError, type Config } from './config/index.js';
import { WORKERS_DIR } from './paths.js';
import { noticeToStderr, resilientSink, type SinkNotice } from '../workers/log-target.js';
import { reasonOf } from './startup-errors.js';

export type { Logger } from 'pino';

/** Fields that must never reach a log line, whatever object is logged. */
const REDACT = [
  'password', 'new_password', 'client_secret', 'token', 'access_token', 'refresh_token', 'id_token',
  'authorization', 'headers.authorization', 'headers.cookie', 'req.headers.authorization', 'req.headers.cookie',
  '*.password', '*.client_secret', '*.token', '*.authorization',
];

const LEVELS: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

function options(level: Level): LoggerOptions {
  return { level, base: { service: 'svc' }, redact: { paths: REDACT, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime };
}

/** Pretty lines only for a person at a terminal in development. */
export function prettyLogs(config: Config, stdoutIsTTY: boolean = process.stdout.isTTY === true): boolean {
  return config.node_env === 'development' && config.security.logging.pretty_print && stdoutIsTTY;
}

export function createLogger(config: Config): Logger {
  const { logging } = config.security;
  if (!logging.enabled) return pino({ level: 'silent' });

  const sinkTarget = logTargetFile();
  const targets: TransportTargetOptions[] = [];
  targets.push(
    prettyLogs(config)
      ? { target: 'pino-pretty', level: logging.level, options: { destination: 1, colorize: true, singleLine: true, translateTime: 'SYS:standard' } }
      : { target: sinkTarget, level: logging.level, options: { destination: 1 } },
  );
  if (logging.file_logging.enabled) {
    const dir = prepareLogDirectory(logging.file_logging.directory);
    // `mkdir` is for pino/file (the fallback); the directory exists by now either way.
    targets.push({ target: sinkTarget, level: logging.level, options: { destination: join(dir, 'svc.log'), mkdir: true, mode: LOG_FILE_MODE } });
  }
  return pino(options(logging.level), survive(pino.transport({ targets })));
}

/**
 * The compiled workers/log-target.js, which pino's worker thread loads; a checkout that has not been
 * built yet (vitest runs src/ directly) falls back to pino's own file target.
 */
function logTargetFile(): string {
  const file = join(WORKERS_DIR, 'log-target.js');
  return existsSync(file) ? file : 'pino/file';
}

/**
 * Lines go to the transport while it lives. Should its worker end (an error the sinks did not
 * answer), the process does not end with it: one notice on stderr, and later lines go to stdout
 * from the main thread (the file copy stops; its sink is in the worker that ended).
 */
export function survive(
  transport: DestinationStream & NodeJS.EventEmitter,
  fallback: () => DestinationStream = () => resilientSink({ destination: 1 }),
  notify: (notice: SinkNotice) => void = noticeToStderr,
): DestinationStream {
  let current: DestinationStream = transport;
  transport.once('error', (err: NodeJS.ErrnoException) => {
    notify({ level: 'error', sink: 'transport', code: err.code, msg: `the log transport ended (${err.message}): log lines go to stdout from the main thread from now on` });
    current = fallback();
  });
  transport.on('error', () => undefined); // a write after the end reports again: answered above once
  return { write: (line: string) => current.write(line) };
}

/**
 * The log can hold what only the operator may read (in development, password-reset links): svc.log
 * is created owner-only like the SQLite file and the development key, and so is each directory the
 * service creates for it. An existing file or directory keeps the mode its owner gave it (a log
 * shipper's group, say): only what the service creates is its to decide.
 */
const LOG_FILE_MODE = 0o600;
const LOG_DIRECTORY_MODE = 0o700;

/**
 * Creates the file log's directory and opens svc.log once for appending, before the transport
 * starts: a failure inside the transport's worker would be lost, so a directory that cannot be
 * made or written is a configuration error (exit 78) naming the setting. The directory is made
 * one level at a time because Node 20's `mkdirSync(..., { recursive: true })` never returns for a
 * path under /proc (it retries the parent on ENOENT forever).
 */
export function prepareLogDirectory(directory: string): string {
  const dir = resolve(directory);
  try {
    makeDirectory(dir);
    closeSync(openSync(join(dir, 'svc.log'), 'a', LOG_FILE_MODE));
  } catch (err) {
    throw new ConfigError([`SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: cannot create or write the log directory ${dir}: ${reasonOf(err)}`]);
  }
  return dir;
}

function makeDirectory(dir: string): void {
  try {
    mkdirSync(dir, LOG_DIRECTORY_MODE);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && statSync(dir).isDirectory()) return;
    if (code !== 'ENOENT' || dirname(dir) === dir) throw err;
    makeDirectory(dirname(dir));
    mkdirSync(dir, LOG_DIRECTORY_MODE); // a second ENOENT (a parent that takes no entries, such as /proc) is thrown
  }
}

/**
 * The CLI's logger: the service's line shape on stderr, at the configured level but never below
 * `warn` (a command's own output is its result; progress lines would only interleave with it).
 */
export function createCliLogger(config: Config): Logger {
  const { logging } = config.security;
  if (!logging.enabled) return pino({ level: 'silent' });
  const level = LEVELS[Math.max(LEVELS.indexOf(logging.level), LEVELS.indexOf('warn'))] ?? 'warn';
  return pino(options(level), pino.destination({ dest: 2, sync: true }));
}
