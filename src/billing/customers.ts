import { recordActivity } from '../core/activity.ts';
import { conflict, notFound } from '../core/errors.ts';
import type { Actor } from '../access/index.ts';
import type { Deps } from '../platform/deps.ts';
import { recordBillingEvent } from './events.ts';
import type { CustomerRow } from './presenter.ts';
import type { BillingAddress, BillingContact } from '../providers/billing/types.ts';
import { inTransaction } from '../db/transaction.ts';
import { lockOrganization } from '../organizations/index.ts';

export interface CustomerInput {
  name?: string | undefined;
  email?: string | undefined;
  address?: BillingAddress | null | undefined;
  tax_id?: string | null | undefined;
}

const contactOf = (row: { name: string; email: string; address: unknown; tax_id: string | null }): BillingContact => ({
  name: row.name,
  email: row.email,
  address: (row.address as BillingAddress | null) ?? null,
  taxId: row.tax_id,
});

export async function getCustomer(deps: Pick<Deps, 'db'>, organizationId: string): Promise<CustomerRow | undefined> {
  return deps.db('billing_customers').where({ organization_id: organizationId }).first();
}

/** Creates the organization's billing contact at the provider and here; one per organization (409). */
export async function createCustomer(
  deps: Pick<Deps, 'db' | 'providers'>,
  actor: Actor,
  organizationId: string,
  input: Required<Pick<CustomerInput, 'name' | 'email'>> & CustomerInput,
): Promise<CustomerRow> {
  return inTransaction(deps.db, async (trx) => {
    // Serialize creations per organization so the provider is asked once.
    await lockOrganization(trx, organizationId);
    if (await trx('billing_customers').where({ organization_id: organizationId }).first('organization_id')) {
      throw conflict('the organization already has a billing customer; change it with PATCH .../billing/customer');
    }
    const contact = contactOf({ name: input.name, email: input.email, address: input.address ?? null, tax_id: input.tax_id ?? null });
    const { customerId } = await deps.providers.billing.createCustomer({ organizationId, contact });
    const [row] = await trx('billing_customers')
      .insert({
        organization_id: organizationId,
        provider: deps.providers.billing.name,
        provider_customer_id: customerId,
        name: contact.name,
        email: contact.email,
        address: contact.address,
        tax_id: contact.taxId,
      })
      .returning('*');
    await recordBillingEvent(trx, {
      organizationId,
      actorId: actor.userId,
      type: 'customer.created',
      title: 'Billing contact added',
      description: `Invoices go to ${contact.name} <${contact.email}>.`,
    });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'billing_customer.created',
      subjectType: 'billing_customer',
      subjectId: organizationId,
    });
    return row as CustomerRow;
  });
}

export async function updateCustomer(deps: Pick<Deps, 'db' | 'providers'>, actor: Actor, organizationId: string, changes: CustomerInput): Promise<CustomerRow> {
  return inTransaction(deps.db, async (trx) => {
    const before = (await trx('billing_customers').where({ organization_id: organizationId }).forUpdate().first()) as CustomerRow | undefined;
    if (!before) throw notFound('billing customer');
    const next = {
      name: changes.name ?? before.name,
      email: changes.email ?? before.email,
      address: changes.address === undefined ? before.address : changes.address,
      tax_id: changes.tax_id === undefined ? before.tax_id : changes.tax_id,
    };
    await deps.providers.billing.updateCustomer(before.provider_customer_id, contactOf(next));
    const [row] = await trx('billing_customers')
      .where({ organization_id: organizationId })
      .update({ ...next, address: next.address === null ? null : JSON.stringify(next.address), updated_at: trx.fn.now() })
      .returning('*');
    await recordBillingEvent(trx, {
      organizationId,
      actorId: actor.userId,
      type: 'customer.updated',
      title: 'Billing contact updated',
      description: `Changed: ${Object.keys(changes).join(', ') || 'nothing'}.`,
    });
    await recordActivity(trx, {
      organizationId,
      actorId: actor.userId,
      action: 'billing_customer.updated',
      subjectType: 'billing_customer',
      subjectId: organizationId,
      data: { fields: Object.keys(changes) },
    });
    return row as CustomerRow;
  });
}
