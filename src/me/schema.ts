import { timestamp, z } from '../core/zod.ts';
import { organizationPermissions } from '../members/index.ts';

export const meSchema = z
  .object({
    user: z.object({
      id: z.string(),
      email: z.string().nullable(),
      name: z.string().nullable(),
      operator: z.boolean().openapi({ description: 'Whether the token is an operator’s (the job console’s `/ops` operations).' }),
      created_at: timestamp.openapi({ description: 'When the service first saw this user (their first request).' }),
    }),
    organizations: z
      .array(
        z.object({
          id: z.string(),
          name: z.string(),
          slug: z.string(),
          role: z.string(),
          permissions: z.array(z.enum(organizationPermissions)).openapi({ description: 'What the role allows in the organization.' }),
          balance: z
            .number()
            .int()
            .nullable()
            .openapi({ description: 'Credits (available plus held), when the role may see them (`credits.view`); null otherwise.' }),
        }),
      )
      .openapi({ description: 'The caller’s organizations by name, at most 100; `GET /organizations` pages through all of them.' }),
    more_organizations: z.boolean().openapi({ description: 'More organizations than listed here: page through `GET /organizations`.' }),
  })
  .openapi('Me');
