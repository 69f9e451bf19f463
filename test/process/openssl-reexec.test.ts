/**
 * The service follows the RSA routine advice itself (src/keys/openssl-reexec.ts, issue 17): on the
 * CPU it was measured on it starts again in place (execve, same pid) with OPENSSL_ia32cap set, and
 * never when the operator set the variable. The plan is checked for every kind of CPU; the addon
 * (native/reexec) is exercised for real, whatever this machine's CPU; and the built service is
 * started as `npm start` runs it, with the outcome this machine's CPU calls for.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { AVX2_RSA_CAP, dispatchNote, rsaDispatchAdvice } from '../../src/keys/openssl-dispatch.js';
import { AUTO_MARK, reexecPlan, type ProcessFacts } from '../../src/keys/openssl-reexec.js';
import { PROJECT_ROOT } from '../../src/paths.js';
import { opensslOfProcess } from '../../bench/openssl-of-process.js';
import { freePort } from '../helpers/app.js';
import { startInstance } from '../helpers/instance.js';
import { until } from '../helpers/until.js';

const FLAGS = 'fpu sse sse2 ssse3 sse4_1 sse4_2 aes avx bmi1 avx2 bmi2 adx sha_ni';
const cpuinfo = (vendor: string, family: number, flags: string) => `processor\t: 0\nvendor_id\t: ${vendor}\ncpu family\t: ${family}\nflags\t\t: ${flags}\n`;
const ZEN3 = cpuinfo('AuthenticAMD', 25, FLAGS);

const facts = (over: Partial<ProcessFacts> = {}): ProcessFacts => ({
  env: { PATH: '/usr/bin', NODE_ENV: 'production', EMPTY: '' },
  cpuinfo: ZEN3,
  execPath: '/opt/node/bin/node',
  cmdline: ['node', '--heap-growing-percent=70', '/srv/svc/dist/src/main.js', '--flag'],
  ...over,
});

describe('reexecPlan', () => {
  it('on Zen 3 without OPENSSL_ia32cap: the same program, arguments and environment, plus the variable and the mark', () => {
    expect(reexecPlan(facts())).toEqual({
      file: '/opt/node/bin/node',
      argv: ['node', '--heap-growing-percent=70', '/srv/svc/dist/src/main.js', '--flag'],
      env: ['PATH=/usr/bin', 'NODE_ENV=production', 'EMPTY=', `OPENSSL_ia32cap=${AVX2_RSA_CAP}`, `${AUTO_MARK}=1`],
    });
  });

  it('goes on as it is when the operator set the variable (any value), after a re-execution, with an IPC channel, or on another CPU', () => {
    for (const value of ['', ':~0x0', AVX2_RSA_CAP, '~0x0']) expect(reexecPlan(facts({ env: { OPENSSL_ia32cap: value } }))).toBeUndefined();
    expect(reexecPlan(facts({ env: { [AUTO_MARK]: '1' } }))).toBeUndefined();
    expect(reexecPlan(facts({ env: { NODE_CHANNEL_FD: '3' } }))).toBeUndefined();
    expect(reexecPlan(facts({ cpuinfo: cpuinfo('AuthenticAMD', 25, `${FLAGS} avx512f avx512ifma`) }))).toBeUndefined();
    expect(reexecPlan(facts({ cpuinfo: cpuinfo('GenuineIntel', 6, FLAGS) }))).toBeUndefined();
    expect(reexecPlan(facts({ cpuinfo: '' }))).toBeUndefined();
    expect(reexecPlan(facts({ cmdline: [] }))).toBeUndefined();
    // Bytes that were not UTF-8 (read back as U+FFFD) cannot be handed on unchanged.
    expect(reexecPlan(facts({ cmdline: ['node', '/srv/caf\uFFFD/main.js'] }))).toBeUndefined();
    expect(reexecPlan(facts({ env: { PATH: '/usr/bin', NAME: 'caf\uFFFD' } }))).toBeUndefined();
  });

  it('the start-up line tells the service\'s choice from the operator\'s, and says why the advice was not applied', () => {
    expect(dispatchNote({ advice: AVX2_RSA_CAP, current: AVX2_RSA_CAP, auto: true })).toBe('OPENSSL_ia32cap=:~0x80000 (set by the service for this CPU: README, Tuning)');
    expect(dispatchNote({ advice: AVX2_RSA_CAP, current: AVX2_RSA_CAP })).toBe('OPENSSL_ia32cap=:~0x80000');
    // A replacing value keeps its warning mark even if something claims it was automatic.
    expect(dispatchNote({ advice: AVX2_RSA_CAP, current: '', auto: true })).toBe("OPENSSL_ia32cap= (replaces the CPU's feature bits: see the warning)");
    expect(dispatchNote({ advice: AVX2_RSA_CAP, current: undefined, unapplied: 'native/reexec is not built' })).toBe(
      'default; on this CPU OPENSSL_ia32cap=:~0x80000 signs RSA ~14% faster (README, Tuning; not set by the service: native/reexec is not built)',
    );
  });
});

const ADDON = join(PROJECT_ROOT, 'native', 'reexec', 'build', 'Release', 'reexec.node');
const run = promisify(execFile);

describe('native/reexec', () => {
  it('replaces the process in place: same pid, the new arguments and environment, standard streams still open', async () => {
    // The child prints its pid, then becomes a second Node.js program that prints its own pid,
    // arguments and one variable on stdout and a line on stderr.
    const second = "process.stdout.write(JSON.stringify({pid:process.pid,argv:process.argv.slice(1),x:process.env.X,path:process.env.PATH===undefined}));process.stderr.write('stderr-open')";
    const first = `process.stdout.write(process.pid+'\\n',()=>require(${JSON.stringify(ADDON)}).execve(process.execPath,['node','-e',${JSON.stringify(second)},'a b','c'],['X=1 2']))`;
    const { stdout, stderr } = await run(process.execPath, ['-e', first]);
    const [pidLine, json] = stdout.split('\n');
    expect(JSON.parse(json!)).toEqual({ pid: Number(pidLine), argv: ['a b', 'c'], x: '1 2', path: true });
    expect(stderr).toBe('stderr-open');
  });

  it('refusals throw with their errno code and leave the process as it was; bad arguments are type errors', async () => {
    const script = `const m=require(${JSON.stringify(ADDON)});const out=[];
      for (const args of [['/nonexistent/program',['x'],[]],['/',['x'],[]],[1,[],[]],[process.execPath,['a\\0b'],[]],[process.execPath,'x',[]],[process.execPath,[],[2]]]) {
        try { m.execve(...args); out.push('returned'); } catch (e) { out.push(e.code); }
      }
      process.stdout.write(JSON.stringify(out), () => process.stderr.write('still-here'));`;
    const { stdout, stderr } = await run(process.execPath, ['-e', script]);
    expect(JSON.parse(stdout)).toEqual(['ENOENT', 'EACCES', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE']);
    expect(stderr).toBe('still-here');
  });
});

const advised = rsaDispatchAdvice(readFileSync('/proc/cpuinfo', 'latin1'));
const environOf = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
const startLineIn = (out: string) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; openssl_rsa?: string }).find((l) => l.msg === 'listening');
/** The `listening` line: /readyz can answer before the logger's write reaches our pipe, so wait for it. */
async function startLineOf(instance: { output(): string }) {
  await until(() => startLineIn(instance.output()) !== undefined, 10_000);
  return startLineIn(instance.output());
}

describe('the service at start-up (dist/src/main.js)', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-openssl-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const env = (name: string): Record<string, string> => ({
    NODE_ENV: 'production',
    STORAGE_SQLITE_PATH: join(dir, `${name}.db`),
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64'),
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
  });

  it(advised ? 'this CPU is Zen 3: the service runs with the advised value, under the pid it was started with' : 'this CPU gets no advice: the service starts once, with the environment it was given', async () => {
    const instance = await startInstance('openssl-auto', await freePort(), env('auto'));
    try {
      const environ = environOf(instance.pid);
      const line = await startLineOf(instance);
      if (advised) {
        expect(environ).toContain(`OPENSSL_ia32cap=${advised}`);
        expect(environ).toContain(`${AUTO_MARK}=1`);
        expect(line?.openssl_rsa).toBe(`OPENSSL_ia32cap=${advised} (set by the service for this CPU: README, Tuning)`);
      } else {
        expect(environ.some((e) => e.startsWith('OPENSSL_ia32cap=') || e.startsWith(`${AUTO_MARK}=`))).toBe(false);
        expect(line).toBeDefined();
        expect(line).not.toHaveProperty('openssl_rsa');
      }
    } finally {
      await instance.stop();
    }
  });

  it("an operator's OPENSSL_ia32cap is kept as it is: no re-execution, no mark", async () => {
    const instance = await startInstance('openssl-operator', await freePort(), { ...env('operator'), OPENSSL_ia32cap: ':~0x0' });
    try {
      const environ = environOf(instance.pid);
      expect(environ).toContain('OPENSSL_ia32cap=:~0x0');
      expect(environ.some((e) => e.startsWith(`${AUTO_MARK}=`))).toBe(false);
      expect((await startLineOf(instance))?.openssl_rsa).toBe('OPENSSL_ia32cap=:~0x0');
    } finally {
      await instance.stop();
    }
  });
});

describe('the bench reads what a server runs with off its process (bench/openssl-of-process.ts)', () => {
  it('the service\'s own choice, an operator\'s value, or the advice for this CPU', async () => {
    const read = async (env: Record<string, string>) => {
      const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
      try {
        await new Promise((resolve) => child.once('spawn', resolve));
        return opensslOfProcess(child.pid!);
      } finally {
        child.kill('SIGKILL');
      }
    };
    expect(await read({ OPENSSL_ia32cap: AVX2_RSA_CAP, [AUTO_MARK]: '1' })).toBe('OPENSSL_ia32cap=:~0x80000 (set by the service for this CPU: README, Tuning)');
    expect(await read({ OPENSSL_ia32cap: ':~0x0' })).toBe('OPENSSL_ia32cap=:~0x0');
    expect(await read({})).toBe(advised === undefined ? undefined : `default; on this CPU OPENSSL_ia32cap=${advised} signs RSA ~14% faster (README, Tuning)`);
    expect(opensslOfProcess(2 ** 30)).toBeUndefined();
  });
});
