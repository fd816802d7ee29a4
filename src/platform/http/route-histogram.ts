import type { Registry } from 'prom-client';

interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly counts: Float64Array;
  sum: number;
}

/**
 * A Prometheus histogram of request durations by a fixed set of labels, exposed through a
 * prom-client registry. prom-client hashes the label set on every observation, even through a
 * label child; here the caller keeps the series it got from `series()` and an observation is a
 * bucket search and two additions.
 */
export class RouteHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    registry: Registry,
    private readonly maxSeries = 10_000,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series for a label set, created on first use; `key` must identify the labels. */
  series(key: string, labels: () => Record<string, string>): Series | undefined {
    let series = this.#series.get(key);
    if (!series && this.#series.size < this.maxSeries) {
      series = { labels: labels(), counts: new Float64Array(this.buckets.length + 1), sum: 0 };
      this.#series.set(key, series);
    }
    return series;
  }

  observe(series: Series, seconds: number): void {
    let i = 0;
    while (i < this.buckets.length && seconds > (this.buckets[i] as number)) i++;
    (series.counts[i] as number) += 1;
    series.sum += seconds;
  }

  /** What prom-client's registry renders (its metric interface). */
  async get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += s.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...s.labels }, value: cumulative });
      });
      cumulative += s.counts[this.buckets.length] as number;
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...s.labels }, value: cumulative });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: cumulative });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.#series.clear();
  }
}
