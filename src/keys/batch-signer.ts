/**
 * ES256 and EdDSA signatures in batches, on worker threads (issue 17).
 *
 * Through libuv's threadpool every token is its own hand-off: the event loop locks the pool's
 * queue and wakes an idle thread (a futex call and a context switch), then takes the answer in a
 * callback of its own. For a signature that costs ~20 µs itself, that hand-off was 11-15% of the
 * event loop's time per client_credentials token (perf, cpu-clock). Here the signatures requested
 * during one turn of the event loop are sent together, at its check phase (setImmediate) or once
 * BATCH_MAX are waiting, split over the threads, and each thread answers its share with one message.
 *
 * RS256 stays on libuv's threadpool (keys/jwt.ts): a signature there is ~200 µs, the hand-off is a
 * small part of it, and four pool threads kept the cores busier than two batching threads did
 * (measured both ways; docs/decisions.md).
 *
 * Two plain worker threads rather than a Piscina pool: a pool schedules one task per message (the
 * `piscina` route of bench:signing paid ~90 µs of CPU per ES256 signature), while a batch per turn
 * needs no scheduling, only a thread to send it to.
 *
 * The threads start on first use and do not keep the process alive while idle. A thread that dies
 * fails the signatures it held and is replaced on the next batch. Without the compiled task file
 * (dist/workers/signer.js), signing falls back to libuv's threadpool, one token at a time.
 */
import { sign as cryptoSign, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { WORKERS_DIR } from '../paths.js';
import type { SignBatch, SignResult } from '../../workers/signer.js';

export const SIGNER_WORKER_FILE = join(WORKERS_DIR, 'signer.js');

/**
 * A batch leaves as soon as it holds this many signatures, without waiting for the end of the turn,
 * so the threads sign while the event loop goes on with the turn's other requests (16 measured best
 * against 8, 32 and end-of-turn only: docs/decisions.md).
 */
const BATCH_MAX = 16;

interface Request {
  key: KeyObject;
  hash: string | null;
  input: string;
  resolve(signature: string): void;
  reject(err: Error): void;
}

interface Thread {
  worker: Worker;
  /** Batches sent and not yet answered, by id. */
  waiting: Map<number, Request[]>;
}

/** Signs with node:crypto on libuv's threadpool (the one-at-a-time path). */
export function signOnPool(hash: string | null, input: string, key: KeyObject): Promise<string> {
  return new Promise((resolve, reject) => {
    cryptoSign(hash, Buffer.from(input, 'latin1'), { key, dsaEncoding: 'ieee-p1363' }, (err, sig) => {
      if (err) reject(err);
      else resolve(sig.toString('base64url'));
    });
  });
}

export class BatchSigner {
  private queue: Request[] = [];
  private scheduled = false;
  private readonly live: Thread[] = [];
  private nextThread = 0;
  private nextBatch = 0;
  /** Whether the task file exists, looked up on first use (not on every batch of the fallback). */
  private present: boolean | undefined;

  constructor(
    /** Compiled task file (workers/signer.ts). */
    private readonly filename: string,
    private readonly threads: number,
  ) {}

  /** The signature of `input` (base64url), computed with the next batch. */
  sign(hash: string | null, input: string, key: KeyObject): Promise<string> {
    return new Promise((resolve, reject) => {
      this.queue.push({ key, hash, input, resolve, reject });
      if (this.queue.length >= BATCH_MAX) {
        this.flush();
        return;
      }
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  /** Threads running now (tests). */
  get running(): number {
    return this.live.length;
  }

  private flush(): void {
    const requests = this.queue;
    if (!requests.length) return;
    this.queue = [];
    const threads = this.startThreads();
    if (!threads.length) {
      for (const r of requests) signOnPool(r.hash, r.input, r.key).then(r.resolve, r.reject);
      return;
    }
    const share = Math.ceil(requests.length / threads.length);
    for (let i = 0; i < requests.length; i += share) {
      this.send(threads[this.nextThread++ % threads.length]!, requests.slice(i, i + share));
    }
  }

  private send(thread: Thread, requests: Request[]): void {
    const keys: KeyObject[] = [];
    const items = requests.map((r): SignBatch['items'][number] => {
      let k = keys.indexOf(r.key);
      if (k < 0) k = keys.push(r.key) - 1;
      return [k, r.hash, r.input];
    });
    const id = this.nextBatch++;
    thread.waiting.set(id, requests);
    // Held open while it owes answers; idle threads let the process exit.
    thread.worker.ref();
    thread.worker.postMessage({ id, keys, items } satisfies SignBatch);
  }

  /** The running threads, started up to `threads`; none when the task file is missing. */
  private startThreads(): Thread[] {
    if (this.live.length >= this.threads || !(this.present ??= existsSync(this.filename))) return this.live;
    while (this.live.length < this.threads) {
      const thread: Thread = { worker: new Worker(this.filename), waiting: new Map() };
      thread.worker.on('message', (result: SignResult) => this.answer(thread, result));
      thread.worker.on('error', (err) => this.retire(thread, err));
      thread.worker.on('exit', (code) => this.retire(thread, new Error(`signing thread exited (code ${code})`)));
      // After the listeners: adding a 'message' listener refs the worker again.
      thread.worker.unref();
      this.live.push(thread);
    }
    return this.live;
  }

  private answer(thread: Thread, result: SignResult): void {
    const requests = thread.waiting.get(result.id);
    if (!requests) return;
    thread.waiting.delete(result.id);
    if (!thread.waiting.size) thread.worker.unref();
    requests.forEach((r, i) => {
      const signature = result.signatures[i];
      if (typeof signature === 'string') r.resolve(signature);
      else r.reject(new Error(`signing failed: ${signature?.error ?? 'no answer'}`));
    });
  }

  /** A thread that failed or exited: what it owed is failed, and the next batch starts another. */
  private retire(thread: Thread, err: Error): void {
    const at = this.live.indexOf(thread);
    if (at >= 0) this.live.splice(at, 1);
    for (const requests of thread.waiting.values()) for (const r of requests) r.reject(err);
    thread.waiting.clear();
  }
}
