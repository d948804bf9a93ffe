import { z } from '../core/zod.ts';
import type { ReadOperation } from './operation.ts';
import type { Descriptor } from './schema.ts';

const cache = new WeakMap<ReadOperation, Descriptor>();

/** An operation as `GET /social/operations` and `GET /search/operations` list it (spec §2.9), its JSON Schemas generated from its zod schemas once. */
export function describeOperation(operation: ReadOperation): Descriptor {
  let descriptor = cache.get(operation);
  if (!descriptor) {
    descriptor = {
      name: operation.name,
      ...(operation.network && { network: operation.network }),
      description: operation.description,
      input_schema: z.toJSONSchema(operation.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
      output_schema: z.toJSONSchema(operation.output, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>,
      price: { ...operation.price },
    };
    cache.set(operation, descriptor);
  }
  return descriptor;
}
