/**
 * Piscina task file: Argon2id hashing and verification (CONTRACT.md: m=19456 KiB, t=2, p=1 by
 * default; the parameters come with each task so the pool needs no configuration of its own).
 * Runs inside a worker thread, so the synchronous calls are right here: they block this thread,
 * never the event loop, and skip a second hop to the libuv pool.
 */
import { setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';
import { Algorithm, hashSync, verifySync } from '@node-rs/argon2';

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

export function hash(task: HashTask): string {
  return hashSync(task.password, {
    algorithm: Algorithm.Argon2id,
    memoryCost: task.params.memory_cost,
    timeCost: task.params.time_cost,
    parallelism: task.params.parallelism,
  });
}

/** The parameters are read from the PHC string itself, so hashes made with older settings still verify. */
export function verify(task: VerifyTask): boolean {
  try {
    return verifySync(task.hash, task.password);
  } catch {
    // A malformed or foreign stored hash can never match; the caller treats it like a wrong password.
    return false;
  }
}
