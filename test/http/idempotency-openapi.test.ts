import { expect } from 'chai';
import { openApiDocument } from '../../src/app/routes.ts';
import { socialOperations } from '../../src/social/index.ts';

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
}
interface Operation {
  operationId: string;
  parameters?: Parameter[];
  responses: Record<string, { headers?: Record<string, unknown> }>;
}

/**
 * Every operation that creates something or moves credits (CONVENTIONS §3, issue 19 item 9),
 * by name: adding one to the API without the header fails here.
 */
const IDEMPOTENT = [
  // Credits move.
  'beginChatRunCredits',
  'captureChatRunCredits',
  'settleChatRunCredits',
  'adjustCredits',
  'changeSubscriptionPlan',
  'runSearch',
  'runReadUrl',
  'createGeneration',
  'startConversationRun',
  'triggerScheduledTask',
  'startScheduledTaskRun',
  // Something is created.
  'createOrganization',
  'createGrant',
  'createProject',
  'addProjectAsset',
  'addProjectCanvas',
  'addProjectConversation',
  'addProjectSkill',
  'createCanvas',
  'createAsset',
  'importAssetFromLink',
  'createAssetUpload',
  'createAssetUploadByTus',
  'createBillingCustomer',
  'createBillingPortalSession',
  'createConversation',
  'postConversationMessage',
  'forkConversation',
  'createSkill',
  'createOrganizationSkill',
  'createConnector',
  'createScheduledTask',
  'createPause',
  'createBulkAction',
  'createInvitation',
  'createSkillListing',
  'addSkillFromCatalog',
  'createWebhookEndpoint',
  'rotateWebhookEndpointSecret', // a new secret: a retry must not rotate twice
  'testWebhookEndpoint',
  'redeliverWebhookDelivery',
];

const runOperationId = (name: string) =>
  `runSocial${name
    .split('_')
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('')}`;

describe('OpenAPI: Idempotency-Key on every operation that creates something or moves credits', () => {
  const document = openApiDocument('test') as unknown as { paths: Record<string, Record<string, Operation>> };
  const operations = new Map<string, { method: string; path: string; operation: Operation }>();
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) operations.set(operation.operationId, { method, path, operation });
  }
  const declares = (operation: Operation) =>
    (operation.parameters ?? []).some((parameter) => parameter.in === 'header' && parameter.name.toLowerCase() === 'idempotency-key');
  const social = socialOperations.map((operation) => runOperationId(operation.name));

  it('lists every social read (metered, billed per call)', () => {
    expect(social.length).to.be.above(30);
    for (const id of social) expect(operations.has(id), id).to.equal(true);
  });

  for (const id of [...IDEMPOTENT, 'runSocial…']) {
    it(`${id} declares Idempotency-Key (optional header), its 409 and 422, and Idempotent-Replayed on its answer`, () => {
      for (const each of id === 'runSocial…' ? social : [id]) {
        const found = operations.get(each);
        expect(found, `${each} is in the document`).to.not.equal(undefined);
        const { operation } = found!;
        expect(declares(operation), `${each} declares Idempotency-Key`).to.equal(true);
        const header = operation.parameters!.find((parameter) => parameter.name.toLowerCase() === 'idempotency-key')!;
        expect(header.required ?? false).to.equal(false);
        expect(Object.keys(operation.responses)).to.include.members(['409', '422']);
        const success = Object.entries(operation.responses).find(([status]) => Number(status) < 300)!;
        expect(success[1].headers, `${each} documents Idempotent-Replayed`).to.have.property('Idempotent-Replayed');
      }
    });
  }

  it('every other POST that answers 201 (a create) declares it too', () => {
    const creates = [...operations.entries()].filter(([, { method, operation }]) => method === 'post' && '201' in operation.responses).map(([id]) => id);
    const missing = creates.filter((id) => !declares(operations.get(id)!.operation));
    expect(missing).to.deep.equal([]);
    for (const id of creates) expect(IDEMPOTENT, `${id} is listed`).to.include(id);
  });

  it('no quote, read or webhook declares it (they create nothing and move no credits)', () => {
    const declaring = [...operations.entries()].filter(([, { operation }]) => declares(operation)).map(([id]) => id);
    expect(declaring.sort()).to.deep.equal([...IDEMPOTENT, ...social].sort());
  });
});
