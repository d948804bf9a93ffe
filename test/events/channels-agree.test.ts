import { expect } from 'chai';
import { runnableJob } from '../../src/app/jobs.ts';
import { eventTypeList, eventTypes, recordEvent, type EventType } from '../../src/core/events.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { builtInRolePermissions } from '../../src/members/permissions.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { webhookDeliveryJob, webhookEndpointDisabledEmailJob } from '../../src/webhooks/jobs.ts';
import { startWorker, type WorkerProcess } from '../../workers/main.ts';
import { testConfig } from '../support/config.ts';
import { eventually } from '../support/eventually.ts';
import { createAsset, createOrganization, newMember, newUser, type TestUser } from '../support/factories.ts';
import { testDatabase } from '../support/hooks.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { follow } from '../support/sse.ts';
import { type Receiver, startReceiver } from '../webhooks/support.ts';
import { eventsSeenBy } from './support.ts';

const customRoles = {
  viewer: ['members.view', 'activity.view', 'credits.view', 'billing.view'],
  hooks: ['webhooks.manage'],
} as const;
const roles = ['owner', 'admin', 'member', 'viewer', 'hooks'] as const;
type Role = (typeof roles)[number];
const permissionsOf = (role: Role): ReadonlySet<string> =>
  role in customRoles ? new Set(customRoles[role as keyof typeof customRoles]) : builtInRolePermissions[role as 'owner'];

/**
 * Issue 36, property over roles: for every event type of the catalog and every role, what
 * GET …/events lists, what the stream sends and what a webhook endpoint of that role receives are
 * the same set — one rule (src/events/visibility.ts) decides all three. An endpoint acts for its
 * creator, who must hold webhooks.manage: one whose creator does not (a member, a viewer) receives
 * nothing and is disabled.
 */
describe('events: the list, the stream and webhooks agree, for every type and role', function () {
  this.timeout(120_000);
  let receiver: Receiver;
  let server: TestServer;
  let worker: WorkerProcess;
  let db: Db;

  before(async () => {
    receiver = await startReceiver();
    const url = testDatabase().url;
    const overrides = { OUTBOUND_ALLOWLIST: `127.0.0.1:${receiver.port}`, WORKER_POLL_INTERVAL_SECONDS: '0.5' };
    server = await startTestServer(overrides, { databaseUrl: url });
    const config = testConfig(overrides);
    worker = await startWorker(config, url, createLogger(config, 'test-worker'), {
      jobs: [runnableJob(webhookDeliveryJob), runnableJob(webhookEndpointDisabledEmailJob)],
    });
    db = createDb(url, { max: 3 });
  });
  after(async () => {
    await worker?.stop();
    await server?.stop();
    await db?.destroy();
    await receiver?.close();
  });

  it('the same set through all three channels', async () => {
    const owner = newUser();
    const org = await createOrganization(server, owner);
    for (const [key, permissions] of Object.entries(customRoles)) {
      const made = await server.request('patch', `/organizations/${org}/roles`, { token: owner.token, body: { key, name: key, permissions } });
      expect(made.status, JSON.stringify(made.body)).to.equal(200);
    }
    const users: Record<Role, TestUser> = { owner, admin: newUser(), member: newUser(), viewer: newUser(), hooks: newUser() };
    for (const role of roles) if (role !== 'owner') users[role] = await newMember(db, org, role);

    // One endpoint per role for every type, made by the owner and then filed as that role's member's
    // (as if they held webhooks.manage when they made it).
    const endpoints = {} as Record<Role, string>;
    for (const role of roles) {
      const res = await server.request('post', `/organizations/${org}/webhook-endpoints`, {
        token: owner.token,
        body: { url: `${receiver.url}/agree-${role}`, event_types: ['*'] },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      endpoints[role] = res.body.webhook_endpoint.id;
      await db('webhook_endpoints').where({ id: endpoints[role] }).update({ created_by_id: users[role].id });
    }
    const streams = {} as Record<Role, Awaited<ReturnType<typeof follow>>>;
    for (const role of roles) {
      streams[role] = await follow(server.url, `/organizations/${org}/events/stream`, users[role].token);
      expect(streams[role].res.status).to.equal(200);
    }

    // The subjects: the owner's private asset, one the workspace can read, the member's own private one.
    const subjects = [
      await createAsset(server, owner, org, { title: 'Private' }),
      await createAsset(server, owner, org, { title: 'Shared', visibility: 'workspace' }),
      await createAsset(server, users.member, org, { title: 'Mine' }),
    ];
    const recorded = new Map<string, { type: EventType; subject: string | null }>();
    const record = async (type: EventType, subject: string | null) => {
      const event = await db.transaction((trx) =>
        recordEvent(trx, { organizationId: org, type, subject: subject ? { type: 'asset', id: subject } : null, object: { type, subject } }),
      );
      recorded.set(event.id, { type, subject });
      return event.id;
    };
    for (const type of eventTypeList) {
      if (eventTypes[type] === 'resource') for (const subject of subjects) await record(type, subject.id);
      else await record(type, null);
    }
    // A sentinel every role may see (a workspace asset): once a stream has it, it has everything before it.
    const sentinel = await record('asset.enriched', subjects[1]!.id);
    for (const role of roles) await eventually(`${role}'s stream reached the sentinel`, async () => streams[role].events.some((e) => e.id === sentinel));
    for (const role of roles)
      await eventually(`${role}'s deliveries settled`, async () => {
        const rows = await db('webhook_deliveries')
          .where({ endpoint_id: endpoints[role] })
          .whereIn('event_id', [...recorded.keys()]);
        return rows.length > 0 && rows.every((row) => row.status !== 'pending') && (rows.length === recorded.size || role === 'member' || role === 'viewer');
      });

    const ours = (ids: string[]) => new Set(ids.filter((id) => recorded.has(id)));
    const readable = { owner: [0, 1, 2], admin: [0, 1, 2], member: [1, 2], viewer: [1], hooks: [1] } as Record<Role, number[]>;
    for (const role of roles) {
      const listed = ours((await eventsSeenBy(server, users[role], org)).map((e) => e.id));
      const streamed = ours(streams[role].events.map((e) => e.id!));
      const delivered = ours(receiver.at(`/agree-${role}`).map((r) => (JSON.parse(r.body) as { id: string }).id));
      // What the role may see, by the catalog: resource events about what it can read, organization events by their permission.
      const expected = new Set(
        [...recorded]
          .filter(([, event]) => {
            const need = eventTypes[event.type];
            if (need !== 'resource') return permissionsOf(role).has(need);
            return readable[role].some((i) => subjects[i]!.id === event.subject);
          })
          .map(([id]) => id),
      );
      expect([...listed].sort(), `${role}: GET …/events`).to.deep.equal([...expected].sort());
      expect([...streamed].sort(), `${role}: the stream`).to.deep.equal([...expected].sort());
      if (permissionsOf(role).has('webhooks.manage')) expect([...delivered].sort(), `${role}: the webhook endpoint`).to.deep.equal([...expected].sort());
      else {
        expect([...delivered], `${role}: the webhook endpoint`).to.deep.equal([]);
        const endpoint = await db('webhook_endpoints').where({ id: endpoints[role] }).first('enabled', 'disabled_reason');
        expect(endpoint).to.deep.equal({ enabled: false, disabled_reason: 'the member who created the endpoint no longer holds webhooks.manage' });
      }
    }
    for (const role of roles) streams[role].hangUp();
  });
});
