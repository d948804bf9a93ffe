/** The authenticated user behind a request or a job (JWT `sub`, `email`, `name`). */
export interface Caller {
  userId: string;
  email: string | null;
  name: string | null;
}
