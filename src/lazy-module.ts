/**
 * A module loaded on first use instead of at start (issue 17: idle memory and start-up time).
 * `lazyModule(() => import('x'))` returns a function giving the same promise to every caller;
 * a failed load (never expected) is not kept, so the next caller tries again instead of every
 * later request failing on a stale rejection.
 */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    if (!pending) {
      const attempt = load();
      pending = attempt;
      attempt.catch(() => {
        if (pending === attempt) pending = undefined;
      });
    }
    return pending;
  };
}
