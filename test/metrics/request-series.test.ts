/**
 * The per-request metrics counted in plain numbers (src/metrics/request-series.ts) export exactly
 * what prom-client's own Counter and Histogram export for the same observations: the scrape text
 * (Prometheus and OpenMetrics) and the JSON, byte for byte.
 */
import client from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BatchedCounter, SeriesHistogram } from '../../src/metrics/request-series.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

function pair() {
  const stock = new client.Registry();
  const ours = new client.Registry();
  const labelNames = ['route', 'method', 'status'] as const;
  return {
    stock,
    ours,
    stockCounter: new client.Counter({ name: 'svc_http_requests_total', help: 'HTTP requests', labelNames, registers: [stock] }),
    stockHistogram: new client.Histogram({ name: 'svc_http_request_duration_seconds', help: 'HTTP request duration', labelNames: ['route', 'method'], buckets: BUCKETS, registers: [stock] }),
    counter: new BatchedCounter({ name: 'svc_http_requests_total', help: 'HTTP requests', labelNames, registers: [ours] }),
    histogram: new SeriesHistogram({ name: 'svc_http_request_duration_seconds', help: 'HTTP request duration', labelNames: ['route', 'method'], buckets: BUCKETS, registers: [ours] }),
  };
}

/** Observations: values on every bound, between them, beyond the last, zero; several series, in mixed order. */
function observations(seed: number): Array<{ route: string; method: string; status: string; seconds: number }> {
  const routes = ['/token', '/jwks', '/api/v1/clients/:id', 'other'];
  const methods = ['GET', 'POST'];
  const out = [];
  let x = seed;
  for (let i = 0; i < 400; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const pick = x % 7;
    const seconds = pick === 0 ? BUCKETS[x % BUCKETS.length]! : pick === 1 ? 3 + (x % 100) / 10 : pick === 2 ? 0 : (x % 100000) / 37000;
    out.push({ route: routes[x % routes.length]!, method: methods[(x >> 3) % 2]!, status: ['200', '401', '304'][(x >> 5) % 3]!, seconds });
  }
  return out;
}

describe('per-request metrics in plain numbers', () => {
  it('scrape text and JSON identical to prom-client for the same observations, twice in a row, in both formats', async () => {
    const p = pair();
    const bound = new Map<string, { inc: () => void; observe: (v: number) => void }>();
    for (const round of [1, 2]) {
      for (const o of observations(round)) {
        p.stockCounter.labels(o.route, o.method, o.status).inc();
        p.stockHistogram.labels(o.route, o.method).observe(o.seconds);
        const key = `${o.route} ${o.method} ${o.status}`;
        let b = bound.get(key);
        if (!b) bound.set(key, (b = { inc: p.counter.series({ route: o.route, method: o.method, status: o.status }), observe: p.histogram.bind({ route: o.route, method: o.method }) }));
        b.inc();
        b.observe(o.seconds);
      }
      // A second scrape without new requests must not count the pending ones again.
      for (let scrape = 0; scrape < 2; scrape++) {
        const text = await p.ours.metrics();
        expect(text).toContain('svc_http_request_duration_seconds_bucket{le="0.001",route="/token",method="GET"}');
        expect(text).toBe(await p.stock.metrics());
        expect(JSON.stringify(await p.ours.getMetricsAsJSON())).toBe(JSON.stringify(await p.stock.getMetricsAsJSON()));
      }
    }
    p.ours.setContentType(client.Registry.OPENMETRICS_CONTENT_TYPE);
    p.stock.setContentType(client.Registry.OPENMETRICS_CONTENT_TYPE);
    expect(await p.ours.metrics()).toBe(await p.stock.metrics());
  });

  it('a reset empties both like prom-client; series bound before it count again afterwards', async () => {
    const p = pair();
    const inc = p.counter.series({ route: '/token', method: 'POST', status: '200' });
    const observe = p.histogram.bind({ route: '/token', method: 'POST' });
    inc();
    observe(0.003);
    p.stockCounter.labels('/token', 'POST', '200').inc();
    p.stockHistogram.labels('/token', 'POST').observe(0.003);
    expect(await p.ours.metrics()).toBe(await p.stock.metrics());
    p.ours.resetMetrics();
    p.stock.resetMetrics();
    expect(await p.ours.metrics()).toBe(await p.stock.metrics());
    expect(await p.ours.metrics()).not.toContain('route="/token"');
    inc();
    observe(7);
    p.stockCounter.labels('/token', 'POST', '200').inc();
    p.stockHistogram.labels('/token', 'POST').observe(7);
    const text = await p.ours.metrics();
    expect(text).toContain('svc_http_request_duration_seconds_bucket{le="+Inf",route="/token",method="POST"} 1');
    expect(text).toContain('svc_http_request_duration_seconds_bucket{le="2.5",route="/token",method="POST"} 0');
    expect(text).toBe(await p.stock.metrics());
  });
});
