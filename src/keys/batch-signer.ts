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
 * RS256 stays on libuv's threadpool (keys/jwt.ts, signOnPool): a signature there is ~200 µs, the
 * hand-off is a small part of it, and four pool threads kept the cores busier than two batching
 * threads did (measured both ways; docs/decisions.md). Its jobs are handed over at the end of the
 * turn that asked for them, one job each.
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

/** Hands one signature to libuv's threadpool now; a synchronous failure rejects it alone. */
function signNow(r: Request): void {
  try {
    cryptoSign(r.hash, Buffer.from(r.input, 'latin1'), { key: r.key, dsaEncoding: 'ieee-p1363' }, (err, sig) => {
      if (err) r.reject(err);
      else r.resolve(sig.toString('base64url'));
    });
  } catch (err) {
    r.reject(err as Error);
  }
}

/** The signatures requested during this turn of the event loop, for signOnPool. */
let turnSigns: Request[] = [];

function handOverTurn(): void {
  const requests = turnSigns;
  turnSigns = [];
  for (const r of requests) signNow(r);
}

/**
 * Signs with node:crypto on libuv's threadpool, one job per signature (RS256), handed over at the
 * end of the turn that asked (its check phase, setImmediate) rather than at once. Waking a pool
 * thread mid-turn lets the kernel give it the event loop's core while the loop still has the
 * turn's other requests to parse, answer and write (V8's wall-clock profile put ~59 µs per refresh
 * in that hand-off, a few of them CPU); at the check phase the loop has done the turn's work and is
 * about to wait anyway. Measured against handing over at once (docs/decisions.md): refresh ahead in
 * five alternated rounds of five, silent re-authentication in four, client_credentials even.
 */
export function signOnPool(hash: string | null, input: string, key: KeyObject): Promise<string> {
  return new Promise((resolve, reject) => {
    if (turnSigns.push({ key, hash, input, resolve, reject }) === 1) setImmediate(handOverTurn);
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
      // Already at a turn's end (or BATCH_MAX): straight to the pool.
      for (const r of requests) signNow(r);
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
