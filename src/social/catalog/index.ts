/**
 * The social catalog (spec §4.4): one metered read per `<network>_<suffix>`, in the spec's order,
 * plus `resolve_mention` last. Routes, quotes, OpenAPI and the descriptor list (§4.3) are built
 * from these entries.
 */
import type { ReadOperation } from '../../metering/index.ts';
import { resolveMention } from './mention.ts';
import { net1 } from './net1.ts';
import { net2 } from './net2.ts';
import { net3 } from './net3.ts';
import { net4 } from './net4.ts';
import { net5 } from './net5.ts';
import { net6 } from './net6.ts';
import { net7 } from './net7.ts';

export { net2Profile } from './net2.ts';

// Each entry keeps its own input/output types; the list widens them to the common contract.
export const socialOperations: readonly ReadOperation[] = [
  ...net1,
  ...net2,
  ...net3,
  ...net4,
  ...net5,
  ...net6,
  ...net7,
  resolveMention,
] as readonly ReadOperation[];

const byName = new Map(socialOperations.map((operation) => [operation.name, operation]));

export const socialOperation = (name: string): ReadOperation | undefined => byName.get(name);
