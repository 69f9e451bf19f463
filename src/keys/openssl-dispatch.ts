/**
 * Which of OpenSSL's RSA routines signs fastest on this CPU (issue 17), as advice to the operator.
 *
 * Every RS256 signature (client_credentials, refresh, the code exchange, silent re-authentication,
 * a password sign-in's ID token) is an RSA-2048 private-key operation: two 1024-bit modular
 * exponentiations. OpenSSL 3.0 (the one Node 20 bundles) picks its routine from the CPU's feature
 * bits: on a CPU with BMI2 and ADX it takes the MULX/ADCX code and never its AVX2 one (RSAZ), a
 * choice made for Intel cores. On AMD Zen 3 the AVX2 routine is the faster one: measured on this
 * project's AMD EPYC (family 25) machine, RSA-2048 signatures took 643-658 µs instead of 741-868 µs
 * from Node, 675-746 µs instead of 793-877 µs in `openssl speed rsa2048` (docs/decisions.md).
 *
 * OpenSSL reads its feature bits once, when the binary is loaded, from the `OPENSSL_ia32cap`
 * environment variable: it cannot be changed from JavaScript (Node's `--env-file` is read too late),
 * only where the process is started. So the service starts itself again with the variable set
 * (openssl-reexec.ts) unless the operator set it, and says on its start-up line what it runs with
 * (README, "Tuning"). Clearing ADX (`:~0x80000`) is what makes the AVX2 routine
 * eligible; the same signatures come out (RSASSA-PKCS1-v1_5 is deterministic), only the routine
 * changes. It also moves P-256 and RSA verification off their MULX code: ~3 µs more per ES256
 * signature and ~9 µs more per RS256 verification there, far less than the ~100 µs a signature saves.
 *
 * Only CPUs where it was measured get the advice: AMD family 25 (Zen 3) without AVX-512 IFMA. Zen 4
 * has IFMA, for which OpenSSL has a faster routine still; Zen 2 and older were not measured.
 */
import { readFileSync } from 'node:fs';

/** The value that makes OpenSSL's AVX2 RSA routine eligible (clears the ADX bit, CPUID 7.0 EBX bit 19). */
export const AVX2_RSA_CAP = ':~0x80000';

export interface DispatchFacts {
  /** The advised `OPENSSL_ia32cap`, or undefined when this CPU is not one it was measured on. */
  advice: string | undefined;
  /** `OPENSSL_ia32cap` as the process was started with it. */
  current: string | undefined;
  /** The service set `current` itself (openssl-reexec.ts), not the operator. */
  auto?: boolean;
  /** Why the service could not set the advised value itself, where it tried. */
  unapplied?: string;
}

/** The advice for the CPU that /proc/cpuinfo describes (its first processor). */
export function rsaDispatchAdvice(cpuinfo: string): string | undefined {
  const first = cpuinfo.split(/\n\s*\n/, 1)[0] ?? '';
  const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(first)?.[1]?.trim();
  const flags = new Set((field('flags') ?? '').split(/\s+/));
  const zen3 = field('vendor_id') === 'AuthenticAMD' && field('cpu family') === '25';
  return zen3 && flags.has('avx2') && flags.has('adx') && flags.has('bmi2') && !flags.has('avx512ifma') ? AVX2_RSA_CAP : undefined;
}

/**
 * Whether an `OPENSSL_ia32cap` value only clears bits of what the CPU reports: `~mask` or nothing
 * before the colon, `~mask` after it (the advised form). OpenSSL 3.0 takes any other form as the bits
 * themselves: a word written without `~` replaces the CPU's, and a value without `:~...` zeroes the
 * extended word (AVX2, BMI2, ADX, AVX-512). So an empty value, easy to leave in a templated systemd or
 * Docker environment, turns off AES-NI and every fast RSA routine: measured on an Intel Xeon with
 * IFMA, RSA-2048 signatures 366 -> 797 µs and AES-256-GCM 0.9 -> 13 ms per MiB (docs/decisions.md).
 */
export function masksOnly(value: string): boolean {
  const parts = value.split(':');
  if (parts.length !== 2) return false;
  const [before = '', after = ''] = parts;
  return (before === '' || before.startsWith('~')) && after.startsWith('~');
}

/** The start-up warning for a value that replaces rather than masks the CPU's bits, if any. */
export function opensslWarning(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env.OPENSSL_ia32cap;
  if (value === undefined || masksOnly(value)) return undefined;
  return `OPENSSL_ia32cap=${JSON.stringify(value)} replaces the CPU's feature bits instead of masking them: OpenSSL may then skip AES-NI, AVX2 and its fast RSA routines (RSA signatures about 2x slower) or use instructions the CPU lacks; unset it, or use the ':~<mask>' form (README, Tuning)`;
}

/** What the start-up line reports: nothing on other CPUs, otherwise whether the advice is followed. */
export function dispatchNote(facts: DispatchFacts): string | undefined {
  if (facts.current !== undefined) {
    const how = !masksOnly(facts.current) ? ' (replaces the CPU\'s feature bits: see the warning)' : facts.auto ? ' (set by the service for this CPU: README, Tuning)' : '';
    return `OPENSSL_ia32cap=${facts.current}${how}`;
  }
  if (facts.advice === undefined) return undefined;
  const why = facts.unapplied === undefined ? '' : `; not set by the service: ${facts.unapplied}`;
  return `default; on this CPU OPENSSL_ia32cap=${facts.advice} signs RSA ~14% faster (README, Tuning${why})`;
}

/** dispatchNote for this machine and an environment (no advice where /proc/cpuinfo cannot be read). */
export function opensslNote(env: NodeJS.ProcessEnv = process.env, how: Pick<DispatchFacts, 'auto' | 'unapplied'> = {}): string | undefined {
  let cpuinfo = '';
  try {
    cpuinfo = readFileSync('/proc/cpuinfo', 'latin1');
  } catch {
    // Not Linux, or no procfs: nothing to advise.
  }
  return dispatchNote({ advice: rsaDispatchAdvice(cpuinfo), current: env.OPENSSL_ia32cap, ...how });
}
