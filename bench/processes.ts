/**
 * The servers under test run as child processes: each in a fresh temp directory, on 127.0.0.1 and a
 * free port, with its output kept (a tail for diagnostics, a count of error lines for the report).
 * Children are spawned with `node` directly, never through npm or a shell, so the pid we hold is the
 * server's own and /proc/<pid>/stat measures the server and nothing else. Start-up is timed from
 * the spawn to the first ready answer (polled every 10 ms).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { ipcProbe, metricsProbe, type EventLoopProbe } from './probes.js';

export const HOST = '127.0.0.1';

export interface LogSummary {
  lines: number;
  /** Lines at error level or above: pino JSON `level >= 50`, or anything that is not JSON on stderr. */
  errorLines: number;
  tail: string[];
}

export interface ServerSpec {
  name: string;
  /** Absolute path of the compiled entry point. */
  script: string;
  /** Node flags before the script (e.g. --cpu-prof, which NODE_OPTIONS refuses). */
  nodeArgs?: string[];
  /** The server's environment (added to PATH, HOME, TMPDIR, LANG, TZ), given its port and temp dir. */
  env: (port: number, dir: string) => Record<string, string>;
  /** Ready when this line appears on stdout ... */
  readyLine?: RegExp;
  /** ... and/or when GET of this path answers 200. */
  readyPath?: string;
  /** How the event-loop delay is read: the metrics endpoint (product) or the IPC probe (baseline). */
  eventLoop?: { kind: 'metrics'; path: string; prefix: string } | { kind: 'ipc' };
}

export interface ServerProcess {
  readonly name: string;
  readonly pid: number;
  readonly baseUrl: string;
  readonly dir: string;
  /** Milliseconds from spawn to the first ready answer. */
  readonly readyMs: number;
  readonly eventLoop: EventLoopProbe | undefined;
  logs(): LogSummary;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();

/** Last resort when the bench dies: SIGKILL the children we started (by their pid). */
export function killAllChildren(): void {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('no port'))));
    });
  });
}

class LogCollector {
  private count = 0;
  private errors = 0;
  private readonly last: string[] = [];

  constructor(private readonly keep = 40) {}

  add(line: string, stream: 'stdout' | 'stderr'): void {
    this.count++;
    if (isErrorLine(line, stream)) this.errors++;
    this.last.push(`[${stream}] ${line}`);
    if (this.last.length > this.keep) this.last.shift();
  }

  summary(): LogSummary {
    return { lines: this.count, errorLines: this.errors, tail: [...this.last] };
  }
}

function isErrorLine(line: string, stream: 'stdout' | 'stderr'): boolean {
  if (line.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(line);
      if (parsed && typeof parsed === 'object' && 'level' in parsed && typeof parsed.level === 'number') return parsed.level >= 50;
    } catch {
      // not JSON after all
    }
  }
  // oidc-provider prints its runtime warning on stderr; it is not an error.
  return stream === 'stderr' && !/WARNING/.test(line);
}

/**
 * Only the basics of our environment reach the servers: the product reads its whole configuration
 * from the environment, and a stray variable in the caller's shell (SVC_CONFIG_FILE, WORKERS_*)
 * would silently change what is measured. Deliberate settings go through ServerSpec.env.
 */
function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

export async function startServer(spec: ServerSpec, timeoutMs = 30_000, dir?: string): Promise<ServerProcess> {
  dir ??= await mkdtemp(join(tmpdir(), `svc-bench-${spec.name}-`));
  const port = await freePort();
  const spawnedAt = performance.now();
  const ipc = spec.eventLoop?.kind === 'ipc';
  const child = spawn(process.execPath, [...(spec.nodeArgs ?? []), spec.script], {
    cwd: dir,
    env: { ...inheritedEnv(), ...spec.env(port, dir) },
    stdio: ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  // spawn failures (ENOENT, EACCES) arrive as an 'error' event; without a listener they would crash us.
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  const logs = new LogCollector();
  let sawReadyLine = spec.readyLine === undefined;
  // Always drain both pipes: a full pipe would block the server and distort the figures.
  createInterface({ input: child.stdout! }).on('line', (line) => {
    logs.add(line, 'stdout');
    if (!sawReadyLine && spec.readyLine!.test(line)) sawReadyLine = true;
  });
  createInterface({ input: child.stderr! }).on('line', (line) => logs.add(line, 'stderr'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));

  const baseUrl = `http://${HOST}:${port}`;
  const el = spec.eventLoop;
  const server: ServerProcess = {
    name: spec.name,
    pid: child.pid ?? -1,
    baseUrl,
    dir,
    readyMs: 0,
    eventLoop: el?.kind === 'ipc' ? ipcProbe(child) : el?.kind === 'metrics' ? metricsProbe(baseUrl + el.path, el.prefix) : undefined,
    logs: () => logs.summary(),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killed = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
        if (!killed) {
          child.kill('SIGKILL');
          await exited;
        }
      }
    },
  };

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (spawnError) throw new Error(`${spec.name} could not be started: ${spawnError.message}`);
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${spec.name} exited during start-up (${child.exitCode ?? child.signalCode}):\n${logs.summary().tail.join('\n')}`);
    }
    if (sawReadyLine && (spec.readyPath === undefined || (await answers200(baseUrl + spec.readyPath)))) {
      return { ...server, readyMs: Math.round(performance.now() - spawnedAt) };
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${spec.name} not ready after ${timeoutMs} ms:\n${logs.summary().tail.join('\n')}`);
    }
    await sleep(10);
  }
}

async function answers200(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
