/**
 * Reports of a storage that refuses statements for want of resources (a full disk, memory, I/O):
 * the first of each code in a minute reaches the operator's log, not one line per refused request
 * while the cause lasts (sqlite/failures.ts, postgresql/tenant-db.ts).
 */
export function oncePerMinute(report: (code: string, err: Error) => void, now: () => number = Date.now): (code: string, err: Error) => void {
  const last = new Map<string, number>();
  return (code, err) => {
    const t = now();
    const at = last.get(code);
    if (at !== undefined && t - at < 60_000) return;
    last.set(code, t);
    report(code, err);
  };
}
