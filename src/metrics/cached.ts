/**
 * A value read from the database at most once per `maxAgeMs`, shared by concurrent readers. Scrapes
 * from several Prometheus servers (and several collectors of one scrape) then cost one query, and a
 * slow database sees no pile-up of identical queries.
 */
export class Cached<T> {
  private value: { at: number; data: T } | undefined;
  private inFlight: Promise<T> | undefined;

  constructor(
    private readonly load: () => Promise<T>,
    private readonly maxAgeMs: number,
  ) {}

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
