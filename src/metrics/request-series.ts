/**
 * The per-request metrics (http_requests_total, http_request_duration_seconds) counted in plain
 * numbers, and handed to prom-client only when it is read (a scrape) (issue 17).
 *
 * Why: prom-client hashes and validates the label set on every inc() and observe(), even through a
 * child from labels(): ~1.1 µs a request for the two, which is 5% of a JWKS or discovery answer.
 * Here a series is looked up once by the caller and each request adds to numbers it holds.
 *
 * - The counter stays prom-client's own: the counts of each series are added with one inc() per
 *   series when the counter is collected.
 * - The histogram is a prom-client Histogram whose series live here: observe() goes to a bound
 *   series, and the export (get, getForPromString, reset) is this class's, in prom-client's exact
 *   shape (test/metrics/request-series.test.ts compares the text of both). Its own observe(),
 *   labels() and zero() are not used on it.
 */
import client from 'prom-client';

type Labels = Record<string, string>;

/** A counter whose series are incremented in place and added to prom-client's when it is read. */
export class BatchedCounter<T extends string> {
  readonly metric: client.Counter<T>;
  private readonly pending = new Map<string, { labels: Partial<Record<T, string>>; n: number }>();

  constructor(config: Omit<client.CounterConfiguration<T>, 'collect'>) {
    const pending = this.pending;
    this.metric = new client.Counter<T>({
      ...config,
      collect(this: client.Counter<T>) {
        for (const slot of pending.values()) {
          if (slot.n === 0) continue;
          this.inc(slot.labels, slot.n);
          slot.n = 0;
        }
      },
    });
  }

  /** The increment of one series (kept by the caller: made once per label set). */
  series(labels: Partial<Record<T, string>>): () => void {
    const key = JSON.stringify(labels);
    let slot = this.pending.get(key);
    if (!slot) this.pending.set(key, (slot = { labels, n: 0 }));
    const s = slot;
    return () => {
      s.n++;
    };
  }
}

/** One series of a SeriesHistogram: counts per bucket (not cumulative; the last is beyond every bound). */
interface HistogramSeries {
  labels: Labels;
  counts: number[];
  sum: number;
  count: number;
}

type Point = client.MetricValueWithName<string> & { sharedLabels?: Labels; exemplar?: null };
type Exported = client.MetricObjectWithValues<client.MetricValueWithName<string>>;

/** A histogram whose series are bound once and observed with a few additions. */
export class SeriesHistogram<T extends string> extends client.Histogram<T> {
  // Set by prom-client's constructor; its typings leave them out.
  declare readonly name: string;
  declare readonly help: string;
  declare readonly aggregator: client.Aggregator;
  private readonly bounds: readonly number[];
  private series = new Map<string, HistogramSeries>();

  constructor(config: client.HistogramConfiguration<T> & { buckets: number[] }) {
    super(config);
    this.bounds = [...config.buckets].sort((a, b) => a - b);
  }

  /** The observe() of one series (kept by the caller). A reset empties the series; the next observation adds it again. */
  bind(labels: Partial<Record<T, string>>): (value: number) => void {
    const key = JSON.stringify(labels);
    const own: Labels = { ...(labels as Labels) };
    const bounds = this.bounds;
    return (value) => {
      let s = this.series.get(key);
      if (!s) this.series.set(key, (s = { labels: own, counts: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 }));
      let i = 0;
      while (i < bounds.length && value > bounds[i]!) i++;
      s.counts[i]!++;
      s.sum += value;
      s.count++;
    };
  }

  /** What the registry formats (prom-client's histogram shape: `le` apart from the series' labels). */
  async getForPromString(): Promise<Exported> {
    const name = this.name;
    const values: Point[] = [];
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: s.labels, value: acc, metricName: `${name}_bucket`, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${name}_bucket`, exemplar: null });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${name}_count`, exemplar: undefined });
    }
    // prom-client's runtime type names are strings (its typings declare a numeric enum it never
    // exports), and its exports carry no `collect`: the typings' shape is not the runtime one.
    return { name, help: this.help, type: 'histogram', values, aggregator: this.aggregator } as unknown as Exported;
  }

  override async get(): Promise<client.MetricObjectWithValues<client.MetricValueWithName<T>>> {
    const data = await this.getForPromString();
    // As prom-client's get(): each point's series labels folded into its own labels.
    const values = data.values.map((v: Point) => {
      const { sharedLabels, labels, ...rest } = v;
      return { ...rest, labels: { ...labels, ...sharedLabels } };
    });
    return { ...data, values } as client.MetricObjectWithValues<client.MetricValueWithName<T>>;
  }

  override reset(): void {
    this.series = new Map();
  }
}
