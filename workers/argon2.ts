/**
 * Piscina task file: Argon2id hashing and verification (CONTRACT.md: m=19456 KiB, t=2, p=1 by
 * default; the parameters come with each task so the pool needs no configuration of its own).
 * Runs inside a worker thread, so the synchronous calls are right here: they block this thread,
 * never the event loop, and skip a second hop to the libuv pool.
 *
 * The project's native Argon2id (argon2-native.ts: one memory area per thread, reused) computes
 * every Argon2id hash it can; @node-rs/argon2 takes the rest (other variants or versions, unusual
 * parameters) and everything when the addon was not built. Both write and read the same PHC strings.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';
import { type Algorithm, hashSync, verifySync } from '@node-rs/argon2';
import { nativeArgon2, nativeArgon2id } from './argon2-native.js';
import { encodeArgon2id, parseArgon2id, withinNativeLimits } from './argon2-phc.js';

export interface Argon2WorkerData {
  /** Nice value for this thread (Linux keeps one per thread; setPriority(n) sets the caller's). */
  nice: number;
}

const nice = (workerData as Partial<Argon2WorkerData> | undefined)?.nice;
if (typeof nice === 'number' && nice > 0) {
  try {
    setPriority(nice);
  } catch {
    // not permitted here (some containers): hashing works the same, only without the yielding
  }
}

export interface Argon2Params {
  memory_cost: number;
  time_cost: number;
  parallelism: number;
}

export interface HashTask {
  password: string;
  params: Argon2Params;
}

export interface VerifyTask {
  hash: string;
  password: string;
}

/**
 * @node-rs/argon2's `Algorithm.Argon2id`. Its enum is a `declare const enum` that tsc inlines but a
 * transpiler working file by file (vitest's) cannot, so the value is spelled out.
 */
const ARGON2ID = 2 as Algorithm;

/** What @node-rs/argon2 writes, kept so that both implementations produce the same shape. */
const SALT_BYTES = 16;
const TAG_BYTES = 32;

export function hash(task: HashTask): string {
  const { memory_cost: memoryKiB, time_cost: passes, parallelism: lanes } = task.params;
  const native = nativeArgon2();
  // The parameters are the operator's; a shape the native path does not take goes to @node-rs.
  if (native && withinNativeLimits({ memoryKiB, passes, lanes, saltBytes: SALT_BYTES, tagBytes: TAG_BYTES })) {
    const salt = randomBytes(SALT_BYTES);
    const tag = nativeArgon2id(native, task.password, salt, passes, memoryKiB, lanes, TAG_BYTES);
    return encodeArgon2id({ memoryKiB, passes, lanes, salt, tag });
  }
  return hashSync(task.password, {
    algorithm: ARGON2ID,
    memoryCost: task.params.memory_cost,
    timeCost: task.params.time_cost,
    parallelism: task.params.parallelism,
  });
}

/** The parameters are read from the PHC string itself, so hashes made with older settings still verify. */
export function verify(task: VerifyTask): boolean {
  const native = nativeArgon2();
  const stored = native ? parseArgon2id(task.hash) : undefined;
  if (native && stored) {
    const tag = nativeArgon2id(native, task.password, stored.salt, stored.passes, stored.memoryKiB, stored.lanes, stored.tag.length);
    return timingSafeEqual(tag, stored.tag);
  }
  try {
    return verifySync(task.hash, task.password);
  } catch {
    // A malformed or foreign stored hash can never match; the caller treats it like a wrong password.
    return false;
  }
}
