import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../platform/logger.ts';

/**
 * A value read from the database at most once per `maxAgeMs`, shared by concurrent readers. Scrapes
 * from several Prometheus servers (and several collectors of one scrape) then cost one query, and a
 * slow database sees no pile-up of identical queries.
 */
export class Cached<T> {
  private value: { at: number; data: T } | undefined;
  private inFlight: Promise<T> | undefined;

  private readonly load: () => Promise<T>;
  private readonly maxAgeMs: number;
  constructor(load: () => Promise<T>, maxAgeMs: number) {
    this.load = load;
    this.maxAgeMs = maxAgeMs;
  }

  get(): Promise<T> {
    if (this.value && Date.now() - this.value.at < this.maxAgeMs) return Promise.resolve(this.value.data);
    this.inFlight ??= this.load()
      .then((data) => {
        this.value = { at: Date.now(), data };
        return data;
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }
}

/** `metrics_collector_errors_total{collector}`: one per registry, shared by the database-reading collectors. */
export function collectorErrors(registry: Registry): Counter<'collector'> {
  const existing = registry.getSingleMetric('metrics_collector_errors_total');
  if (existing) return existing as Counter<'collector'>;
  return new Counter({
    name: 'metrics_collector_errors_total',
    help: 'Scrapes at which a collector could not read the database (its series were left out)',
    labelNames: ['collector'],
    registers: [registry],
  });
}

/**
 * A collector's database reading, shared for `cacheMs` and fail-soft: when the database cannot be
 * read, the scrape still answers (process and HTTP metrics), this collector falls back to
 * `fallback`, and the failure is counted in `metrics_collector_errors_total{collector}` and logged.
 */
export function softReading<T>(
  registry: Registry,
  collector: string,
  load: () => Promise<T>,
  fallback: T,
  options: { cacheMs?: number | undefined; log?: Logger | undefined } = {},
): () => Promise<T> {
  const reading = new Cached(load, options.cacheMs ?? 5000);
  const errors = collectorErrors(registry);
  return async () => {
    try {
      return await reading.get();
    } catch (error) {
      errors.inc({ collector });
      options.log?.warn({ err: error }, `${collector} metrics could not be read`);
      return fallback;
    }
  };
}
