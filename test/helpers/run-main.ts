/**
 * The built service (dist/src/main.js, what `npm start` runs; `npm test` builds first) in a child
 * process, for start-up failures: its exit code and everything it wrote. The build starts in a
 * fraction of the time src/main.ts takes through vite-node, which transforms every module again in
 * each process (after editing src/, `npm run build` before running one of these files alone). A
 * process that keeps running (a degraded start) is stopped with SIGTERM once `until` matches its
 * output, or after `maxMs`.
 */
import { spawn } from 'node:child_process';
import { BUILT_MAIN } from './instance.js';

export interface MainRun {
  code: number | null;
  /** stdout and stderr as they arrived. */
  output: string;
  /** stderr alone. */
  stderr: string;
}

export function runMain(env: Record<string, string>, opts: { until?: RegExp; maxMs?: number } = {}): Promise<MainRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BUILT_MAIN], {
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let stderr = '';
    const stop = () => child.kill('SIGTERM');
    const timer = setTimeout(stop, opts.maxMs ?? 30_000);
    const collect = (d: Buffer) => {
      output += d.toString();
      if (opts.until?.test(output)) stop();
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      collect(d);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, stderr });
    });
  });
}
