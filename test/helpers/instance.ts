/**
 * The service as a separate process, for tests that need instances sharing nothing in memory (the
 * two-instance test), a real kill or a real shutdown: the build (dist/src/main.js, what `npm start`
 * runs; `npm test` builds first, and the Argon2 worker file comes from dist/ in every test anyway).
 * It starts in a fraction of the time src/main.ts takes through vite-node. After editing src/, run
 * `npm run build` before running one of these files alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** What `npm start` runs. */
export const BUILT_MAIN = join(ROOT, 'dist', 'src', 'main.js');

export interface Instance {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** The process id of the child this started (the service keeps it if it re-executes itself). */
  pid: number;
  /** Everything the process wrote so far (stdout and stderr), for failure messages. */
  output(): string;
  /** SIGTERM, then waits for the exit (graceful drain). */
  stop(): Promise<void>;
  /** SIGKILL (nothing drained, nothing flushed), then waits for the exit. */
  kill(): Promise<void>;
  /** The process's exit code once it exited (null after a signal), undefined while it runs. */
  exitCode(): number | null | undefined;
}

/** Starts the built service in a process of its own with exactly this environment; waits until /readyz says ready. */
export async function startInstance(name: string, port: number, env: Record<string, string>, opts: { readyWithinMs?: number } = {}): Promise<Instance> {
  let out = '';
  const child: ChildProcess = spawn(process.execPath, [BUILT_MAIN], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (d: Buffer) => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let exited: number | null | undefined;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exited = code;
      resolve();
    }),
  );
  // A crashed test worker must not leave the instance behind.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);

  const url = `http://127.0.0.1:${port}`;
  const readyWithin = opts.readyWithinMs ?? 30_000;
  const deadline = Date.now() + readyWithin;
  for (;;) {
    if (exited !== undefined) throw new Error(`instance ${name} exited with ${exited} before it was ready:\n${out}`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      kill();
      throw new Error(`instance ${name} not ready within ${readyWithin / 1000} s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    port,
    pid: child.pid!,
    output: () => out,
    exitCode: () => exited,
    async stop() {
      process.off('exit', kill);
      if (exited === undefined) {
        child.kill('SIGTERM');
        const timer = setTimeout(kill, 10_000);
        await exit;
        clearTimeout(timer);
      }
    },
    async kill() {
      process.off('exit', kill);
      if (exited === undefined) {
        kill();
        await exit;
      }
    },
  };
}
