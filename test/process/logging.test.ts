/**
 * Issue 19 item 6: the logging settings act (security.logging.*), observed on the service run as a
 * process: the level filters, pretty printing only in development, the file copy in the configured
 * directory, and nothing at all when disabled. Secrets never reach a line.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/app.js';
import { startInstance } from '../helpers/instance.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-logging-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SECRET = 'bootstrap-secret-that-must-not-be-logged';

function baseEnv(name: string): Record<string, string> {
  return {
    NODE_ENV: 'production',
    BASE_URL: 'http://localhost',
    STORAGE_SQLITE_PATH: join(dir, `${name}.db`),
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: 'boot',
    SVC_BOOTSTRAP_CLIENT_SECRET: SECRET,
  };
}

/** Starts, makes a request that logs at info (`request`) and one with the secret in a header, stops; the output. */
async function run(name: string, env: Record<string, string>): Promise<string> {
  const instance = await startInstance(name, await freePort(), { ...baseEnv(name), ...env });
  try {
    await fetch(`${instance.url}/oidc/v1/.well-known/openid-configuration`);
    await fetch(`${instance.url}/api/v1/clients`, { headers: { authorization: `Basic ${Buffer.from(`boot:${SECRET}`).toString('base64')}` } });
  } finally {
    await instance.stop();
  }
  return instance.output();
}

const jsonLines = (out: string) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string });

describe('security.logging', () => {
  it('level warn: warnings only, as JSON lines, copied to <directory>/svc.log', async () => {
    const logs = join(dir, 'warn-logs');
    const out = await run('warn', { SECURITY_LOGGING_LEVEL: 'warn', SECURITY_LOGGING_PRETTY_PRINT: 'true', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'true', SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs });
    const lines = jsonLines(out);
    expect(lines.some((l) => l.level === 40 && /SVC_BOOTSTRAP_CLIENT_ID/.test(l.msg))).toBe(true);
    expect(lines.every((l) => l.level >= 40)).toBe(true);
    // pretty_print acts in development only: production stays JSON.
    const file = readFileSync(join(logs, 'svc.log'), 'utf8');
    const fileLines = jsonLines(file);
    expect(fileLines.some((l) => /SVC_BOOTSTRAP_CLIENT_ID/.test(l.msg))).toBe(true);
    expect(fileLines.every((l) => l.level >= 40)).toBe(true);
    expect(out + file).not.toContain(SECRET);
  });

  it('level info: request lines too; file logging off writes no directory', async () => {
    const logs = join(dir, 'info-logs');
    const out = await run('info', { SECURITY_LOGGING_LEVEL: 'info', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false', SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs });
    const lines = jsonLines(out);
    expect(lines.some((l) => l.level === 30 && l.msg === 'request')).toBe(true);
    expect(existsSync(logs)).toBe(false);
    expect(out).not.toContain(SECRET);
  });

  it('pretty printing in development: human-readable lines, not JSON', async () => {
    const out = await run('pretty', { NODE_ENV: 'development', SECURITY_LOGGING_LEVEL: 'info', SECURITY_LOGGING_PRETTY_PRINT: 'true', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false' });
    expect(out).toMatch(/WARN/);
    expect(out).toContain('SVC_BOOTSTRAP_CLIENT_ID/SECRET are set');
    expect(jsonLines(out)).toHaveLength(0);
    expect(out).not.toContain(SECRET);
  });

  it('disabled: no log line at all, and no file', async () => {
    const logs = join(dir, 'off-logs');
    const out = await run('off', { SECURITY_LOGGING_ENABLED: 'false', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'true', SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs });
    expect(jsonLines(out)).toHaveLength(0);
    expect(out).not.toMatch(/SVC_BOOTSTRAP_CLIENT_ID|"msg"/);
    expect(existsSync(join(logs, 'svc.log'))).toBe(false);
  });
});
