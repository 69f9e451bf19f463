/**
 * Fair admission to the Argon2 pool per source (the client's address), issue 12 item 7.
 * At most `slots` tasks run; up to `maxWaiting` wait in one queue per source, and free slots go to
 * the sources in turn (round robin), so a sign-in waits behind at most one task per busy address,
 * not behind everything one address queued. When the waiting room is full, a newcomer takes the
 * place of the newest waiting task of the address that holds the most (and more than the
 * newcomer's own address): that address gets 429; only when no other address holds more does the
 * newcomer get 503 (the pool is simply busy).
 */
import { Unavailable } from '../errors.js';

interface Waiter {
  grant: () => void;
  refuse: (err: Error) => void;
}

export class FairAdmission {
  private running = 0;
  private waitingTotal = 0;
  /** Insertion order is the turn order. */
  private readonly waiting = new Map<string, Waiter[]>();
  /** Running + waiting per source. */
  private readonly held = new Map<string, number>();

  constructor(
    private readonly slots: number,
    private readonly maxWaiting: number,
  ) {}

  /** Resolves when `source` may run one task; call release() once it is done. */
  acquire(source: string): Promise<void> {
    if (this.running < this.slots) {
      this.running++;
      this.hold(source, 1);
      return Promise.resolve();
    }
    if (this.waitingTotal >= this.maxWaiting && !this.preemptFor(source)) return Promise.reject(busy());
    return new Promise<void>((grant, refuse) => {
      const queue = this.waiting.get(source);
      const waiter = { grant, refuse };
      if (queue) queue.push(waiter);
      else this.waiting.set(source, [waiter]);
      this.waitingTotal++;
      this.hold(source, 1);
    });
  }

  release(source: string): void {
    this.hold(source, -1);
    this.running--;
    const next = this.waiting.keys().next();
    if (next.done) return;
    const turn = next.value;
    const queue = this.waiting.get(turn)!;
    const waiter = queue.shift()!;
    // The source goes to the back of the line for its next task.
    this.waiting.delete(turn);
    if (queue.length) this.waiting.set(turn, queue);
    this.waitingTotal--;
    this.running++;
    waiter.grant();
  }

  /** Refuses the newest waiter of the heaviest other source, if it holds more than `source`. */
  private preemptFor(source: string): boolean {
    const own = this.held.get(source) ?? 0;
    let victim: string | undefined;
    let most = own;
    for (const s of this.waiting.keys()) {
      const h = this.held.get(s) ?? 0;
      if (s !== source && h > most) {
        most = h;
        victim = s;
      }
    }
    if (victim === undefined) return false;
    const queue = this.waiting.get(victim)!;
    const waiter = queue.pop()!;
    if (!queue.length) this.waiting.delete(victim);
    this.waitingTotal--;
    this.hold(victim, -1);
    waiter.refuse(overShare());
    return true;
  }

  private hold(source: string, delta: number): void {
    const n = (this.held.get(source) ?? 0) + delta;
    if (n > 0) this.held.set(source, n);
    else this.held.delete(source);
  }
}

/** This source holds more than its share of the pool right now (the surface answers 429). */
export class SourceOverShare extends Error {
  readonly retryAfterSeconds = 1;
  constructor() {
    super('Too many sign-ins in progress from this address; retry shortly');
    this.name = 'SourceOverShare';
  }
}

function overShare(): SourceOverShare {
  return new SourceOverShare();
}

function busy(): Unavailable {
  return new Unavailable('Too many password operations in progress; retry shortly');
}
