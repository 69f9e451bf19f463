/**
 * The project's own Argon2id (native/argon2, a C addon built by `npm ci`): the same hashes as
 * @node-rs/argon2, but each thread keeps one memory area and reuses it. @node-rs/argon2 maps a
 * fresh 19 MiB block per hash, which the kernel zeroes, then wipes it on drop: ~17% of a verify's
 * CPU in a profile (docs/decisions.md, "Argon2id with a reused memory area").
 *
 * Loaded once per thread. Used only with a SIMD compression function (AVX-512 where the CPU and OS
 * support AVX-512F + AVX-512VL, else AVX2): the portable C one is slower than @node-rs/argon2 (~19
 * against ~13 ms a hash here), so on a machine without AVX2, as when the addon was not built (no
 * compiler), callers fall back to @node-rs/argon2.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../src/paths.js';

/** The addon's compression functions, fastest first. */
export type NativeArgon2Simd = 'avx512' | 'avx2' | 'scalar';

/**
 * hashRaw's optional last argument (tests, benchmarks): undefined or false the fastest compression
 * function here, true or 'scalar' the portable one, 'avx2' / 'avx512' that one (an Error with code
 * ERR_ARGON2_SIMD_UNAVAILABLE where the CPU or OS lacks it). Every choice computes the same tags.
 */
export type NativeArgon2Mode = boolean | NativeArgon2Simd;

export interface NativeArgon2 {
  hashRaw(password: Buffer, salt: Buffer, passes: number, memoryKiB: number, lanes: number, tagLength: number, mode?: NativeArgon2Mode): Buffer;
  /** Frees this thread's memory area (it is allocated again by the next call). */
  release(): void;
  /** The compression function hashRaw uses by default: the best this CPU and OS support. */
  readonly simd: NativeArgon2Simd;
}

export const NATIVE_ARGON2_FILE = join(PROJECT_ROOT, 'native', 'argon2', 'build', 'Release', 'argon2_reuse.node');

/** An idle thread gives its area back after this long, so a quiet instance does not hold 19 MiB per thread. */
const RELEASE_AFTER_MS = 10_000;
/** An area above this (a hash with unusual parameters) is freed right after its call. */
const KEEP_AT_MOST_KIB = 65_536;

let loaded: NativeArgon2 | null | undefined;

/** The addon as built, whatever its compression function (tests compare both against @node-rs). */
export function loadNativeArgon2(): NativeArgon2 | undefined {
  if (loaded === undefined) {
    loaded = null;
    if (existsSync(NATIVE_ARGON2_FILE)) {
      try {
        loaded = createRequire(import.meta.url)(NATIVE_ARGON2_FILE) as NativeArgon2;
      } catch {
        // built for another Node.js ABI or machine: the fallback computes the same hashes
      }
    }
  }
  return loaded ?? undefined;
}

/** The addon when it is the faster implementation here; undefined means @node-rs/argon2. */
export function nativeArgon2(): NativeArgon2 | undefined {
  const native = loadNativeArgon2();
  return native?.simd === 'avx512' || native?.simd === 'avx2' ? native : undefined;
}

let releaseTimer: NodeJS.Timeout | undefined;

/** Argon2id tag of `password` through the native addon, with the area kept for the next call. */
export function nativeArgon2id(
  native: NativeArgon2,
  password: string,
  salt: Buffer,
  passes: number,
  memoryKiB: number,
  lanes: number,
  tagLength: number,
): Buffer {
  const pwd = Buffer.from(password, 'utf8');
  try {
    return native.hashRaw(pwd, salt, passes, memoryKiB, lanes, tagLength);
  } finally {
    pwd.fill(0);
    if (memoryKiB > KEEP_AT_MOST_KIB) native.release();
    else scheduleRelease(native);
  }
}

function scheduleRelease(native: NativeArgon2): void {
  if (releaseTimer) releaseTimer.refresh();
  else {
    releaseTimer = setTimeout(() => {
      releaseTimer = undefined;
      native.release();
    }, RELEASE_AFTER_MS);
    releaseTimer.unref();
  }
}
