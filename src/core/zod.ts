import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// `.openapi(...)` on every schema, for names and examples in /openapi.json.
extendZodWithOpenApi(z);

export { z };

/** Query-string boolean: only the words `true` and `false` (no surprising truthiness). */
export const queryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');

export const uuid = z.string().uuid();
export const timestamp = z.string().datetime({ offset: true }).openapi({ format: 'date-time' });
/** Any JSON value; named, so OpenAPI gets one recursive $ref (unnamed, the generator recurses forever). */
export const jsonValue: z.ZodType<unknown> = z.json().openapi('JsonValue');
