/**
 * Redis for tests: a unique key prefix on the shared server (127.0.0.1:6379), or a private
 * redis-server on a spare port that a test can stop and start again (fault tests).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Socket } from 'node:net';
import { uniqueRedisPrefix } from '../../bench/services.js';
import { freePort } from './app.js';

export const SHARED_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other run uses, so parallel runs against one server never collide. */
export const uniquePrefix = (name: string) => uniqueRedisPrefix(`svctest-${name}-${process.pid}`);

export interface PrivateRedis {
  port: number;
  url: string;
  /** Starts the server (again) on the same port and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops the server and waits until the port is closed. */
  stop(): Promise<void>;
  /** Freezes / thaws the process (SIGSTOP / SIGCONT): connections stay open, nothing answers. */
  pause(): void;
  resume(): void;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.connect(port, '127.0.0.1');
  });
}

async function until(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** `args`: more redis-server options (`--enable-protected-configs yes` lets a test CONFIG SET dir). */
export async function privateRedis(args: readonly string[] = []): Promise<PrivateRedis> {
  const port = await freePort();
  let proc: ChildProcess | undefined;
  const r: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      if (proc) return;
      // No persistence: a restart comes back empty, like a failed-over cache.
      proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning', ...args], { stdio: 'ignore' });
      const child = proc;
      child.once('exit', () => {
        if (proc === child) proc = undefined;
      });
      await until(() => accepts(port), 5000, `redis-server on ${port}`);
    },
    pause() {
      proc?.kill('SIGSTOP');
    },
    resume() {
      proc?.kill('SIGCONT');
    },
    async stop() {
      const child = proc;
      if (!child) return;
      proc = undefined;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      await until(async () => !(await accepts(port)), 5000, `redis-server on ${port} to stop`);
    },
  };
  // A crashed test worker must not leave the server behind.
  process.once('exit', () => proc?.kill('SIGKILL'));
  await r.start();
  return r;
}
