/** The authenticated user behind a request or a job (JWT `sub`, `email`, `name`). */
export interface Caller {
  userId: string;
  email: string | null;
  name: string | null;
  /** An operator of the service (token claim or configured id, src/auth/operator.ts); never true for a job's caller. */
  operator?: boolean;
  /** When the request's token expires (its `exp`): what outlives the request (an event stream) ends then. Absent for a job's caller. */
  expiresAt?: Date;
}
