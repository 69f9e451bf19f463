/**
 * The service's log sinks (stdout and `<file_logging.directory>/svc.log`), as a pino transport
 * target run in pino's transport worker thread (src/log.ts), and as the main thread's fallback.
 *
 * Why not pino's own `pino/file`: its stream forgets every write error but a broken pipe, and an
 * unanswered error ends the transport's worker and then the whole process. One full disk under
 * `logs/` (or a stdout redirected to one) stopped the identity provider at its first log line.
 * A log sink is not worth an outage, so here a sink that cannot be written keeps what it holds (up
 * to HELD_BYTES), drops what comes beyond, retries each second and with every new line, and says
 * so on stderr: once when it fails, once when it writes again (with the number of lines lost).
 * A broken pipe (the reader of stdout went away) does not come back: that sink is switched off.
 *
 * A file sink also follows log rotation: moved or removed (logrotate's `create`), its path is
 * opened again within FOLLOW_MS, so no signal or restart is needed.
 */
import { once } from 'node:events';
import { closeSync, fstatSync, openSync, statSync, writeSync } from 'node:fs';
import sonicBoom from 'sonic-boom';

// The package is CommonJS: its export is the class, which carries itself as `.SonicBoom` too.
const { SonicBoom } = sonicBoom;
type SonicBoom = sonicBoom.SonicBoom;

export interface LogTargetOptions {
  /** A file descriptor (1: stdout) or a file to append to. */
  destination: number | string;
  /** The mode of a file this sink creates. */
  mode?: number;
}

/** One notice about a sink, in the service's log line shape (level, ISO time, service, msg). */
export interface SinkNotice {
  level: 'warn' | 'error';
  sink: string;
  code?: string;
  dropped?: number;
  msg: string;
}

/**
 * What a failing sink keeps for when it can write again; beyond it new lines are dropped, so a full
 * disk or a stalled reader never fills the memory as well.
 */
export const HELD_BYTES = 8 * 1024 * 1024;
const RETRY_MS = 1000;
/** How often a file sink looks whether its file was moved or removed (log rotation). */
export const FOLLOW_MS = 1000;

const PINO_LEVEL = { warn: 40, error: 50 } as const;

/** Writes a notice to stderr synchronously; a stderr that cannot take it loses it (nothing else can). */
export function noticeToStderr(notice: SinkNotice): void {
  const { level, ...rest } = notice;
  const line = JSON.stringify({ level: PINO_LEVEL[level], time: new Date().toISOString(), service: 'svc', ...rest }) + '\n';
  try {
    writeSync(2, line);
  } catch {
    // stderr is gone too
  }
}

/** A sink that survives its destination's write errors (see the header). */
export function resilientSink(opts: LogTargetOptions, notify: (notice: SinkNotice) => void = noticeToStderr): SonicBoom {
  const sink = new SonicBoom({ dest: opts.destination, append: true, sync: false, maxLength: HELD_BYTES, mode: opts.mode });
  const name = opts.destination === 1 ? 'stdout' : opts.destination === 2 ? 'stderr' : String(opts.destination);
  let failure: string | undefined;
  let dropped = 0;
  let retry: NodeJS.Timeout | undefined;
  let ending = false;
  /** A reopen of a moved file is under way; it could not be opened again (told once until it can). */
  let reopening = false;
  let reopenFailed = false;

  // At the end a failing sink lets go of what it holds: ending would wait for a write that cannot
  // happen (pino's transport gives up after 10 s, so a stop with a full disk took that long).
  const end = sink.end.bind(sink);
  sink.end = () => {
    ending = true;
    if (failure) sink.destroy();
    else end();
  };

  const tick = () => {
    if (failure) {
      sink.write(''); // writes what the sink holds: the next 'write' or 'error' tells
      return;
    }
    if (dropped > 0) {
      notify({ level: 'warn', sink: name, dropped, msg: `${dropped} log lines to ${name} were dropped: it took them slower than the service wrote them` });
      dropped = 0;
      return;
    }
    clearInterval(retry);
    retry = undefined;
  };
  const watch = () => {
    retry ??= setInterval(tick, RETRY_MS);
    retry.unref();
  };

  sink.on('error', (err: NodeJS.ErrnoException) => {
    const code = err.code ?? 'EIO';
    if (reopening) {
      // The moved file's successor could not be opened: the lines go on to the moved file.
      reopening = false;
      couldNotReopen(code);
      return;
    }
    if (code === 'EPIPE') {
      sink.write = () => true;
      clearInterval(retry);
      notify({ level: 'error', sink: name, code, msg: `the reader of ${name} went away: log lines to ${name} are dropped from now on` });
      return;
    }
    if (ending) {
      sink.destroy();
      return;
    }
    if (failure) return;
    failure = code;
    notify({ level: 'error', sink: name, code, msg: `cannot write the log to ${name} (${code}): up to ${HELD_BYTES >> 20} MiB of lines are kept and later ones dropped until it can be written again` });
    watch();
  });
  sink.on('write', () => {
    if (!failure) return;
    notify({ level: 'warn', sink: name, code: failure, dropped, msg: `the log is written to ${name} again after ${failure}; ${dropped} lines were dropped` });
    failure = undefined;
    dropped = 0;
  });
  sink.on('drop', () => {
    dropped++;
    watch();
  });
  // Log rotation: a file renamed or removed under the sink (logrotate's `create`) is opened again
  // at its path within FOLLOW_MS, as Python's WatchedFileHandler and `tail -F` do. (`copytruncate`
  // needs nothing: the sink appends, so a truncated file goes on from its start.)
  const file = typeof opts.destination === 'string' ? opts.destination : undefined;
  const couldNotReopen = (code: string) => {
    if (!reopenFailed) notify({ level: 'error', sink: name, code, msg: `${name} was moved or removed and cannot be opened again (${code}): log lines go on to the moved file until it can` });
    reopenFailed = true;
  };
  const follow = () => {
    if (!file || reopening || failure || ending) return;
    try {
      const atPath = statSync(file);
      const open = fstatSync((sink as unknown as { fd: number }).fd);
      if (atPath.ino === open.ino && atPath.dev === open.dev) return;
    } catch {
      // Removed (or the descriptor is gone): open the path again.
    }
    try {
      // Opened here first: a reopen that fails leaves a listener behind in sonic-boom, once a second.
      closeSync(openSync(file, 'a', opts.mode ?? 0o666));
    } catch (err) {
      couldNotReopen((err as NodeJS.ErrnoException).code ?? 'EIO');
      return;
    }
    reopening = true;
    sink.reopen();
  };
  const following = file ? setInterval(follow, FOLLOW_MS) : undefined;
  following?.unref();
  sink.on('ready', () => {
    if (!reopening) return;
    reopening = false;
    if (reopenFailed) notify({ level: 'warn', sink: name, msg: `${name} is open again: log lines go to it` });
    reopenFailed = false;
  });
  sink.on('close', () => {
    clearInterval(retry);
    clearInterval(following);
  });
  return sink;
}

/** pino's transport target (`pino.transport({ targets: [{ target: <this file>, options }] })`). */
export default async function logTarget(opts: LogTargetOptions): Promise<SonicBoom> {
  const sink = resilientSink(opts);
  await once(sink, 'ready');
  return sink;
}
