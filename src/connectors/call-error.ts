/** A connector call that failed: the message names the connector and, for an HTTP refusal, its status. */
export class ConnectorCallError extends Error {
  readonly status: number | null;
  constructor(message: string, status: number | null) {
    super(message);
    this.status = status;
    this.name = 'ConnectorCallError';
  }
}
