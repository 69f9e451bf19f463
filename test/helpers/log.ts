/**
 * A logger whose lines are kept as parsed objects, for tests of what the service logs (start-up
 * warnings, operator hints): startTestApp(env, { log }) or any dependency that takes a Logger.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import type { Logger } from '../../src/log.js';

export interface CapturedLog {
  log: Logger;
  /** Every line written so far: pino's fields (`level` 40 = warn, `msg`, ...). */
  lines: Array<Record<string, any>>;
  /** The lines logged at warn. */
  warnings(): Array<Record<string, any>>;
}

export function captureLog(level: pino.Level = 'warn'): CapturedLog {
  const lines: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, any>);
      done();
    },
  });
  return { log: pino({ level }, stream), lines, warnings: () => lines.filter((l) => l.level === 40) };
}
