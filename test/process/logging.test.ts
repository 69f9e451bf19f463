/**
 * Issue 19 item 6: the logging settings act (security.logging.*), observed on the service run as a
 * process: the level filters, pretty printing only in development on a terminal, the file copy in the
 * configured directory, and nothing at all when disabled. Secrets never reach a line. Issue 17 / 18
 * item 13: no line per request unless security.logging.access_log asks, then exactly one (none for
 * probes and static assets).
 */
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { rsaDispatchAdvice } from '../../src/keys/openssl-dispatch.js';
import { freePort } from '../helpers/app.js';
import { BUILT_MAIN } from '../helpers/instance.js';

/**
 * Starts the built service as a process (`npm test` builds first), waits for /readyz, and hands back
 * its URL, output (stdout and stderr as they came, and stderr alone) and stop (its exit code).
 * `stdout`: a file descriptor for the service's stdout instead of a pipe read here.
 */
async function startService(env: Record<string, string>, opts: { stdout?: number } = {}) {
  const port = await freePort();
  let out = '';
  let err = '';
  const child = spawn(process.execPath, [BUILT_MAIN], { env: { PATH: process.env.PATH ?? '', ...env, HOST: '127.0.0.1', PORT: String(port) }, stdio: ['ignore', opts.stdout ?? 'pipe', 'pipe'] });
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited before it was ready:\n${out}`);
    const ready = await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the service was not ready in time:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    output: () => out,
    stderr: () => err,
    alive: () => child.exitCode === null,
    async stop(): Promise<number | null> {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

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
  const instance = await startService({ ...baseEnv(name), ...env });
  try {
    await fetch(`${instance.url}/oidc/v1/.well-known/openid-configuration`);
    await fetch(`${instance.url}/api/v1/clients`, { headers: { authorization: `Basic ${Buffer.from(`boot:${SECRET}`).toString('base64')}` } });
  } finally {
    await instance.stop();
  }
  return instance.output();
}

const jsonLines = (out: string) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string });

// Each case starts the service as a process: seconds on a loaded machine, hence the limit.
describe('security.logging', { timeout: 240_000 }, () => {
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

  it('production defaults at info: no line per request (issue 17), the start line names the issuer', async () => {
    const logs = join(dir, 'info-logs');
    const out = await run('info', { SECURITY_LOGGING_LEVEL: 'info', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false', SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs });
    const lines = jsonLines(out) as Array<{ level: number; msg: string; issuer?: string; multi_tenancy?: boolean; access_log?: string }>;
    expect(lines.some((l) => l.msg === 'request' || l.msg === 'request refused')).toBe(false);
    const start = lines.find((l) => l.msg === 'listening');
    expect(start).toMatchObject({ issuer: 'http://localhost/oidc/v1', multi_tenancy: false, access_log: 'off', redis: 'off' });
    expect(existsSync(logs)).toBe(false);
    expect(out).not.toContain(SECRET);
    // Started without OPENSSL_ia32cap: no warning; the start line names it only where the service
    // set it itself (AMD Zen 3: test/process/openssl-reexec.test.ts).
    expect(lines.some((l) => (l as { setting?: string }).setting === 'OPENSSL_ia32cap')).toBe(false);
    if (rsaDispatchAdvice(readFileSync('/proc/cpuinfo', 'latin1')) === undefined) expect(start).not.toHaveProperty('openssl_rsa');
    else expect(start).toHaveProperty('openssl_rsa', 'OPENSSL_ia32cap=:~0x80000 (set by the service for this CPU: README, Tuning)');
  });

  it('an OPENSSL_ia32cap that replaces the CPU feature bits (here: empty) is named on the start line and warned about', async () => {
    const out = await run('ia32cap', { SECURITY_LOGGING_LEVEL: 'info', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false', OPENSSL_ia32cap: '' });
    const lines = jsonLines(out) as Array<{ level: number; msg: string; setting?: string; openssl_rsa?: string }>;
    expect(lines.find((l) => l.msg === 'listening')?.openssl_rsa).toBe("OPENSSL_ia32cap= (replaces the CPU's feature bits: see the warning)");
    const warning = lines.find((l) => l.setting === 'OPENSSL_ia32cap');
    expect(warning?.level).toBe(40);
    expect(warning?.msg).toMatch(/^OPENSSL_ia32cap="" replaces the CPU's feature bits instead of masking them/);
  });

  it('access_log all: exactly one line per request with its reason; none for probes, static assets and the favicon', async () => {
    const logs = join(dir, 'access-logs');
    const instance = await startService({
      ...baseEnv('access'),
      SECURITY_LOGGING_LEVEL: 'info',
      SECURITY_LOGGING_ACCESS_LOG: 'all',
      SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'true',
      SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs,
    });
    try {
      for (const path of ['/healthz', '/readyz', '/favicon.ico', '/assets/app.css', '/oidc/v1/assets/app.css', '/oidc/v1/assets/passkey.js']) await (await fetch(`${instance.url}${path}`)).arrayBuffer();
      await (await fetch(`${instance.url}/oidc/v1/.well-known/openid-configuration`)).arrayBuffer();
      await (await fetch(`${instance.url}/api/v1/clients`, { headers: { authorization: `Basic ${Buffer.from(`boot:${SECRET}`).toString('base64')}` } })).arrayBuffer();
      await (await fetch(`${instance.url}/api/v1/clients`, { headers: { authorization: 'Bearer not-a-token' } })).arrayBuffer();
    } finally {
      await instance.stop();
    }
    type Line = { level: number; msg: string; path?: string; status?: number; reason?: string; req_id?: string };
    for (const text of [instance.output(), readFileSync(join(logs, 'svc.log'), 'utf8')]) {
      const lines = jsonLines(text) as Line[];
      const requests = lines.filter((l) => l.msg === 'request');
      expect(requests.map((l) => l.path)).toEqual(['/oidc/v1/.well-known/openid-configuration', '/api/v1/clients', '/api/v1/clients']);
      expect(requests.every((l) => l.level === 30 && typeof l.req_id === 'string')).toBe(true);
      expect(requests[2]).toMatchObject({ status: 401 });
      expect(typeof requests[2]!.reason).toBe('string');
      // One request, one line: no separate refusal line beside it.
      expect(lines.some((l) => l.msg === 'request refused')).toBe(false);
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain('not-a-token');
    }
  });

  it('development without a terminal: plain JSON (no colour codes), one line per request by default', async () => {
    const out = await run('pretty', { NODE_ENV: 'development', SECURITY_LOGGING_LEVEL: 'info', SECURITY_LOGGING_PRETTY_PRINT: 'true', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false' });
    expect(out).not.toMatch(/\u001b\[/);
    const lines = jsonLines(out);
    expect(lines.some((l) => l.level === 40 && /SVC_BOOTSTRAP_CLIENT_ID\/SECRET are set/.test(l.msg))).toBe(true);
    expect(lines.filter((l) => l.msg === 'request')).toHaveLength(2);
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

describe('the CLI logs with the service logger factory', { timeout: 120_000 }, () => {
  it('a CLI warning has the same shape as the service lines (service, ISO time, msg), on stderr', async () => {
    const { spawnSync } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const cli = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));
    // Development without SVC_ENCRYPTION_KEY: the CLI warns that it uses a development key.
    const run = spawnSync(process.execPath, [cli, 'migrate'], {
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'development', STORAGE_SQLITE_PATH: join(dir, 'cli.db'), SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const warnings = jsonLines(run.stderr) as Array<Record<string, unknown>>;
    const warning = warnings.find((l) => /SVC_ENCRYPTION_KEY is not set/.test(String(l.msg)));
    expect(warning).toBeDefined();
    expect(warning).toMatchObject({ level: 40, service: 'svc' });
    expect(String(warning!.time)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
    expect(run.stdout).not.toMatch(/"level"/);
    expect(run.stderr + run.stdout).not.toMatch(/\u001b\[/);
  });
});

/**
 * A log sink that cannot be written never stops the service (workers/log-target.ts). /dev/full
 * answers every write with ENOSPC, as a full disk does: before, the first log line ended the
 * process ("Unhandled 'error' event ... ENOSPC" from pino's transport).
 */
describe('a log sink on a full disk', { timeout: 240_000 }, () => {
  const DISCOVERY = '/oidc/v1/.well-known/openid-configuration';
  type Line = { level: number; msg: string; sink?: string; code?: string; path?: string };
  const requestLines = (text: string) => (jsonLines(text) as Line[]).filter((l) => l.msg === 'request' && l.path === DISCOVERY);

  async function serveTwenty(instance: Awaited<ReturnType<typeof startService>>): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${instance.url}${DISCOVERY}`);
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    return statuses;
  }

  it('svc.log on a full disk: every request answered, stdout keeps every line, one notice on stderr, a clean stop', async () => {
    const logs = join(dir, 'full-file-logs');
    mkdirSync(logs);
    symlinkSync('/dev/full', join(logs, 'svc.log'));
    const instance = await startService({ ...baseEnv('full-file'), SECURITY_LOGGING_LEVEL: 'info', SECURITY_LOGGING_ACCESS_LOG: 'all', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'true', SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs });
    let code: number | null;
    try {
      expect(await serveTwenty(instance)).toEqual(Array(20).fill(200));
      await new Promise((r) => setTimeout(r, 1500)); // a retry tick of the failing sink
      expect(instance.alive()).toBe(true);
    } finally {
      const stopping = Date.now();
      code = await instance.stop();
      // A sink that cannot flush lets go at the end: pino's transport would wait 10 s for it.
      expect(Date.now() - stopping).toBeLessThan(8000);
    }
    expect(code).toBe(0);
    expect(requestLines(instance.output())).toHaveLength(20);
    const notices = (jsonLines(instance.stderr()) as Line[]).filter((l) => l.sink !== undefined);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ level: 50, sink: join(logs, 'svc.log'), code: 'ENOSPC' });
  });

  it('stdout on a full disk: every request answered, svc.log keeps every line, one notice on stderr', async () => {
    const logs = join(dir, 'full-stdout-logs');
    const full = openSync('/dev/full', 'w');
    let instance: Awaited<ReturnType<typeof startService>>;
    try {
      instance = await startService({ ...baseEnv('full-stdout'), SECURITY_LOGGING_LEVEL: 'info', SECURITY_LOGGING_ACCESS_LOG: 'all', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'true', SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs }, { stdout: full });
    } finally {
      closeSync(full); // the child holds its own copy
    }
    let code: number | null;
    try {
      expect(await serveTwenty(instance)).toEqual(Array(20).fill(200));
      expect(instance.alive()).toBe(true);
    } finally {
      code = await instance.stop();
    }
    expect(code).toBe(0);
    expect(requestLines(readFileSync(join(logs, 'svc.log'), 'utf8'))).toHaveLength(20);
    const notices = (jsonLines(instance.stderr()) as Line[]).filter((l) => l.sink !== undefined);
    expect(notices).toEqual([expect.objectContaining({ level: 50, sink: 'stdout', code: 'ENOSPC' })]);
  });
});
