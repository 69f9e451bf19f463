/**
 * The notes `npm run bench` prints beside its goals: the RSA-2048 floor next to the RS256 rows
 * (bench/rsa-ceiling.ts), a real measurement noted on exactly the rows where both servers sign once
 * per request, and the windows whose load generator, not the server, set the pace (run-report.ts).
 */
import { describe, expect, it } from 'vitest';
import { evaluateGoals } from '../../bench/goals.js';
import type { Measurement } from '../../bench/load.js';
import { rsaCeiling, rsaCeilingNote } from '../../bench/rsa-ceiling.js';
import { loadgenLimited, type RunReport, type ScenarioResult, type SideResult } from '../../bench/run-report.js';

const side = (rps: number, cpu: number): SideResult =>
  ({ measured: { rps, cpuMicrosPerRequest: cpu, latency: { p99: 10 } } as unknown as Measurement, checkProblems: [] }) as unknown as SideResult;

const row = (name: string, product: [number, number], baseline: [number, number]): ScenarioResult => ({
  name,
  label: name,
  connections: 50,
  product: side(...product),
  baseline: side(...baseline),
  ratio: product[0] / baseline[0],
  cpuRatio: baseline[1] / product[1],
});

function goals(rsaCeilingFigure: unknown) {
  const report = {
    environment: { rsaCeiling: rsaCeilingFigure },
    scenarios: [row('cc-rs256', [6600, 280], [4000, 390]), row('refresh', [4300, 370], [3400, 455]), row('cc-es256', [21000, 60], [6600, 190])],
    servers: { product: { idleRssBytes: null, readyMs: 400 }, baseline: {} },
  } as unknown as Omit<RunReport, 'goals'>;
  return evaluateGoals(report);
}

describe('the RSA signature floor of the bench', () => {
  it('measures a signature on this machine as CPU per signature', () => {
    const c = rsaCeiling(0.2);
    expect(c.signatures).toBeGreaterThan(0);
    // RSA-2048 private-key operations take tens to hundreds of µs on any CPU this runs on.
    expect(c.signMicros).toBeGreaterThan(20);
    expect(c.signMicros).toBeLessThan(20_000);
  });

  it('bounds the CPU ratio by the baseline CPU per request over the signature', () => {
    expect(rsaCeilingNote({ signMicros: 221.4, signatures: 4000 }, 390)).toBe('; RSA-2048 signature alone: 221 µs of CPU, so no CPU ratio above 1.76x is possible here');
    expect(rsaCeilingNote(undefined, 390)).toBe('');
    expect(rsaCeilingNote({ signMicros: 221 }, null)).toBe('');
  });

  it('is noted on the client_credentials RS256 and refresh rows only', () => {
    const byGoal = (all: ReturnType<typeof goals>, prefix: string) => all.find((g) => g.goal.startsWith(prefix))!.measured;
    const measured = goals({ signMicros: 221, signatures: 4000 });
    expect(byGoal(measured, 'client_credentials RS256 throughput')).toContain('so no CPU ratio above 1.76x is possible here');
    expect(byGoal(measured, 'refresh_token grant')).toContain('so no CPU ratio above 2.06x is possible here');
    expect(byGoal(measured, 'client_credentials ES256')).not.toContain('RSA-2048');
    // A run that did not measure it (an older results file) prints the rows as before.
    expect(byGoal(goals(undefined), 'client_credentials RS256 throughput')).toBe('1.65x (6600 vs 4000 req/s; CPU ratio 1.39x)');
  });
});

describe('the load-generator note of the bench', () => {
  it('names the windows whose load generator used 90% of a core or more, and only those', () => {
    const window = (loadgenCpuMicros: number) => ({ measured: { seconds: 10, loadgenCpuMicros } }) as unknown as SideResult;
    const scenarios = [
      { name: 'jwks', label: 'jwks', product: window(10_200_000), baseline: window(4_300_000) },
      { name: 'refresh', label: 'refresh', product: window(1_600_000), baseline: window(9_000_000) },
    ] as unknown as ScenarioResult[];
    expect(loadgenLimited(scenarios)).toEqual(['jwks / product 102%', 'refresh / baseline 90%']);
    expect(loadgenLimited([])).toEqual([]);
  });
});
