/** A connector call that failed: the message names the connector and, for an HTTP refusal, its status. */
export class ConnectorCallError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'ConnectorCallError';
  }
}
