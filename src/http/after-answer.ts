/**
 * Work whose duration must not show in an answer (it depends on whose address a form named): run
 * once the answer has been decided and sent on its way, for every case alike. A failure is logged
 * by the caller's `onError`, never thrown (the answer is gone).
 *
 * The work still in flight is tracked, so that what it writes is not lost or left half-done: the
 * app's shutdown waits for it before the audit log and the mailer close (app.ts release), and
 * Mailer.drain waits for it because such work queues mail (the reset request, the e-mail change).
 */
const pending = new Set<Promise<void>>();

export function afterAnswer(work: () => Promise<void>, onError: (err: unknown) => void): void {
  const done = new Promise<void>((resolve) => {
    setImmediate(() => {
      work()
        .catch(onError)
        .finally(() => resolve());
    });
  });
  pending.add(done);
  void done.finally(() => pending.delete(done));
}

/** Resolves once no work after an answer is in flight (work started meanwhile included). */
export async function afterAnswerSettled(): Promise<void> {
  while (pending.size) await Promise.all([...pending]);
}
