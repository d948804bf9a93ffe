import { pageOf, pageQuery } from '../core/pagination.ts';
import { singleLine, timestamp, z } from '../core/zod.ts';

export const slugSchema = z
  .string()
  .min(1)
  .max(48)
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be lowercase letters and digits, words joined by single hyphens')
  .openapi({ example: 'acme-studio' });

export { organizationIdParams } from '../core/zod.ts';

export const organizationSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    logo_url: z.string().nullable().openapi({ description: 'Served at `/organizations/{id}/logo` when set.' }),
    onboarded_at: timestamp.nullable(),
    role: z.string().openapi({ description: "The caller's role in the organization." }),
    created_by_id: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi('Organization');

export const organizationEnvelope = z.object({ organization: organizationSchema });

export const listOrganizationsQuery = z.object({ ...pageQuery });
export const organizationPage = pageOf(organizationSchema);

export const createOrganizationBody = z
  .object({ name: singleLine(120), slug: slugSchema.optional() })
  .strict()
  .openapi('CreateOrganization');

export const updateOrganizationBody = z
  .object({ name: singleLine(120).optional(), slug: slugSchema.optional() })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'send at least one of name, slug')
  .openapi({ minProperties: 1 })
  .openapi('UpdateOrganization');

export const availableSlugQuery = z.object({ slug: z.string().min(1).max(120).openapi({ description: 'Wanted slug (any text; it is normalised).' }) });

export const availableSlugSchema = z
  .object({
    slug: z.string().openapi({ description: 'The normalised form of the wanted slug.' }),
    available: z.boolean(),
    suggestion: z.string().openapi({ description: 'An available slug: the wanted one, or one close to it.' }),
  })
  .openapi('AvailableSlug');
