/**
 * The benches' one option parser (bench/cli.ts) and the flags of `npm run bench` (bench/options.ts):
 * precedence (flag > environment > smoke default > default), refusals of unknown flags and
 * malformed values, and a usage text generated from the same declaration as the values.
 */
import { describe, expect, it } from 'vitest';
import { UsageError, defineCommand, parseCommandLine, usageText } from '../../bench/cli.js';
import { parseOptions } from '../../bench/options.js';
import { SCENARIO_NAMES } from '../../bench/scenarios.js';

const cmd = defineCommand({
  usage: 'usage: x [options]',
  flags: {
    seconds: { kind: 'number', help: 'seconds', env: 'X_SECONDS', default: 20, smoke: 2, min: 0.5, integer: false },
    tenants: { kind: 'number', help: 'tenants', default: 100 },
    pool: { kind: 'numbers', help: 'pool sizes', default: [50, 200], smoke: [10] },
    only: { kind: 'names', help: 'names', default: [], choices: ['a', 'b', 'c'] },
    results: { kind: 'string', help: 'dir', default: '/tmp/r' },
    keep: { kind: 'boolean', help: 'keep' },
    mode: { kind: 'string', help: 'mode', env: 'X_MODE', default: 'x', choices: ['x', 'y'] },
  },
});

describe('bench option parser', () => {
  it('takes the defaults, or the smoke defaults with --smoke', () => {
    expect(parseCommandLine(cmd, [])).toEqual({ smoke: false, seconds: 20, tenants: 100, pool: [50, 200], only: [], results: '/tmp/r', keep: false, mode: 'x' });
    expect(parseCommandLine(cmd, ['--smoke'])).toMatchObject({ smoke: true, seconds: 2, tenants: 100, pool: [10] });
  });

  it('lets an explicit flag win over the environment and the smoke defaults, the environment over the defaults', () => {
    expect(parseCommandLine(cmd, ['--smoke', '--seconds', '3'], { X_SECONDS: '7' })).toMatchObject({ seconds: 3 });
    expect(parseCommandLine(cmd, ['--smoke'], { X_SECONDS: '7' })).toMatchObject({ seconds: 7 });
    expect(parseCommandLine(cmd, ['--pool', '1000,50,50', '--only', 'b,a', '--keep', '--results', 'out'])).toMatchObject({ pool: [50, 1000], only: ['b', 'a'], keep: true, results: 'out' });
  });

  it('refuses unknown flags, malformed numbers and unknown names instead of falling back to a default', () => {
    expect(() => parseCommandLine(cmd, ['--tenant', '5'])).toThrow(UsageError);
    expect(() => parseCommandLine(cmd, ['--tenants', 'many'])).toThrow(/--tenants must be an integer >= 1/);
    expect(() => parseCommandLine(cmd, ['--tenants', '1.5'])).toThrow(UsageError);
    expect(() => parseCommandLine(cmd, ['--seconds', '0.1'])).toThrow(/--seconds must be a number >= 0.5/);
    expect(() => parseCommandLine(cmd, ['--pool', '10,x'])).toThrow(UsageError);
    expect(() => parseCommandLine(cmd, ['--only', 'a,z'])).toThrow(/unknown z/);
    expect(() => parseCommandLine(cmd, ['positional'])).toThrow(UsageError);
    expect(() => parseCommandLine(cmd, ['--mode', 'z'])).toThrow(/--mode: unknown z; known: x, y/);
    expect(() => parseCommandLine(cmd, [], { X_MODE: 'X' })).toThrow(/--mode: unknown X/);
  });

  it('takes a string of its choices from the flag or the environment', () => {
    expect(parseCommandLine(cmd, ['--mode', 'y'])).toMatchObject({ mode: 'y' });
    expect(parseCommandLine(cmd, [], { X_MODE: 'y' })).toMatchObject({ mode: 'y' });
    expect(parseCommandLine(cmd, ['--mode', 'x'], { X_MODE: 'y' })).toMatchObject({ mode: 'x' });
  });

  it('answers help, and describes every flag with its default in the usage text', () => {
    expect(parseCommandLine(cmd, ['--help'])).toBe('help');
    const text = usageText(cmd);
    for (const flag of ['--seconds <n>', '--tenants <n>', '--pool <a,b>', '--only <a,b>', '--results <s>', '--keep', '--smoke', '--help']) expect(text).toContain(flag);
    expect(text).toContain('env X_SECONDS, default 20; smoke 2');
    expect(text).toContain('one or more of: a b c');
    expect(text).toContain('env X_MODE, default x); one of: x y');
  });
});

describe('npm run bench options', () => {
  it('keeps its flags, environment variables and smoke defaults', () => {
    expect(parseOptions(['--smoke'], {}, '/r')).toEqual({ duration: 1, warmup: 0, connections: 10, smoke: true, only: [], keep: false, resultsDir: '/r', backend: 'sqlite' });
    expect(parseOptions([], { BENCH_DURATION: '5', BENCH_ONLY: 'jwks,refresh', BENCH_RESULTS_DIR: '/x' }, '/r')).toMatchObject({ duration: 5, warmup: 3, connections: 50, only: ['jwks', 'refresh'], resultsDir: '/x' });
  });

  it('runs the product on SQLite unless --backend or BENCH_BACKEND says postgresql, and refuses other backends', () => {
    expect(parseOptions([], {}, '/r')).toMatchObject({ backend: 'sqlite' });
    expect(parseOptions(['--backend', 'postgresql'], {}, '/r')).toMatchObject({ backend: 'postgresql' });
    expect(parseOptions([], { BENCH_BACKEND: 'postgresql' }, '/r')).toMatchObject({ backend: 'postgresql' });
    expect(parseOptions(['--backend', 'sqlite'], { BENCH_BACKEND: 'postgresql' }, '/r')).toMatchObject({ backend: 'sqlite' });
    const writes: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => writes.push(chunk) > 0) as typeof process.stderr.write;
    try {
      expect(parseOptions(['--backend', 'mysql'], {}, '/r')).toBe(1);
      expect(parseOptions([], { BENCH_BACKEND: 'redis' }, '/r')).toBe(1);
    } finally {
      process.stderr.write = original;
    }
    expect(writes.join('')).toContain('--backend: unknown mysql; known: sqlite, postgresql');
    expect(writes.join('')).toContain('--backend: unknown redis');
  });

  it('knows every scenario by name and refuses others (exit status 1, the usage on stderr)', () => {
    const writes: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => writes.push(chunk) > 0) as typeof process.stderr.write;
    try {
      expect(parseOptions(['--only', 'jwks,nope'], {}, '/r')).toBe(1);
    } finally {
      process.stderr.write = original;
    }
    expect(writes.join('')).toContain('unknown nope');
    for (const name of SCENARIO_NAMES) expect(writes.join('')).toContain(name);
    expect(parseOptions(['--only', SCENARIO_NAMES.join(',')], {}, '/r')).toMatchObject({ only: [...SCENARIO_NAMES] });
  });
});
