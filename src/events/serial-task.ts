/**
 * Runs an async job one at a time and coalesces triggers: a trigger while the job runs schedules
 * exactly one more run after it (that run may start before the trigger's change was visible to the
 * running one), and every trigger meanwhile shares it. Used for key reloads, so a burst of rotation
 * events costs at most two rebuilds and two rebuilds never race to swap the key set.
 */
export class SerialTask {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(private readonly job: () => Promise<void>) {}

  /** Resolves when a run that started after this call has finished. */
  run(): Promise<void> {
    if (!this.running) {
      this.running = this.job().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.run();
      });
    return this.queued;
  }
}
