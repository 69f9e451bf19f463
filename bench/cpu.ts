/**
 * Server CPU time from /proc/<pid>/stat. utime + stime there cover every thread of the process
 * (event loop, libuv threadpool where WebCrypto signs, Piscina and pino worker threads), which is
 * what "CPU per request" must count. Values are in clock ticks (usually 100 per second, so each
 * reading has 10 ms granularity: measured windows of a few seconds keep that error below 1%).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

/** `getconf CLK_TCK`, read once; 100 when getconf is missing (the Linux default). */
export function clockTicksPerSecond(): number {
  if (ticksPerSecond === undefined) {
    try {
      const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
      ticksPerSecond = Number.isInteger(n) && n > 0 ? n : 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU time (user + system) consumed so far by process `pid`, in microseconds. */
export function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) is in parentheses and may contain spaces: split after the last ')'.
  // What follows starts at field 3 (state); utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`unexpected /proc/${pid}/stat format`);
  return ((utime + stime) * 1e6) / clockTicksPerSecond();
}

/** CPU time of this (load generator) process, in microseconds, for the same window. */
export function selfCpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/**
 * CPU time used by the whole machine so far (all CPUs, everything but idle and iowait), in
 * microseconds, from the first line of /proc/stat. Subtracting the server's and our own share over
 * a window shows how much other processes competed for the cores while we measured.
 */
export function machineBusyMicros(): number {
  const first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const ticks = first.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already included in user)
  const busy = ticks.slice(0, 8).reduce((sum, t, i) => (i === 3 || i === 4 ? sum : sum + (Number.isFinite(t) ? t : 0)), 0);
  return (busy * 1e6) / clockTicksPerSecond();
}
