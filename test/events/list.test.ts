import { expect } from 'chai';
import { eventTypeList, onEventRecorded, type RecordedEvent, recordEvent } from '../../src/core/events.ts';
import { deleteOldEventsJob } from '../../src/events/index.ts';
import { deleteOldEvents } from '../../src/events/retention.ts';
import { allJobs } from '../../src/app/jobs.ts';
import { openApiDocument } from '../../src/app/routes.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { useServer } from '../support/suite.ts';
import { eventsSeenBy } from './support.ts';

/** GET /organizations/{id}/events: filters, keyset paging, retention; the hook point; the `webhooks` section. */
describe('events: list, retention, hook point, OpenAPI', () => {
  const ctx = useServer();
  let owner: TestUser;
  let org: string;

  const record = (type: 'credits.low_balance' | 'member.added', n: number, organization = org) =>
    ctx.db.transaction((trx) => recordEvent(trx, { organizationId: organization, type, subject: null, object: { n } }));

  before(async () => {
    owner = newUser();
    org = await createOrganization(ctx.server, owner);
  });

  it('newest first, keyset-paged without gaps or repeats, filtered by type and time', async () => {
    const created: RecordedEvent[] = [];
    for (let i = 0; i < 7; i++) created.push(await record(i % 2 ? 'member.added' : 'credits.low_balance', i));
    const first = await ctx.server.request('get', `/organizations/${org}/events`, { token: owner.token, query: { limit: 3, type: 'credits.low_balance' } });
    expect(first.status).to.equal(200);
    expect(first.body.items.map((e: any) => e.data.object.n)).to.deep.equal([6, 4, 2]);
    expect(first.body.items[0]).to.deep.equal({
      id: created[6]!.id,
      type: 'credits.low_balance',
      organization_id: org,
      created_at: created[6]!.created_at,
      data: { object: { n: 6 } },
    });
    const second = await ctx.server.request('get', `/organizations/${org}/events`, {
      token: owner.token,
      query: { limit: 3, type: 'credits.low_balance', cursor: first.body.next_cursor },
    });
    expect(second.body.items.map((e: any) => e.data.object.n)).to.deep.equal([0]);
    expect(second.body.next_cursor).to.equal(null);

    // Several types, comma-separated; all pages together are every event once.
    const both = await eventsSeenBy(ctx.server, owner, org, { type: 'credits.low_balance,member.added', limit: 2 });
    expect(both.filter((e) => typeof e.data.object.n === 'number').map((e) => e.data.object.n)).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);

    const since = await eventsSeenBy(ctx.server, owner, org, { since: created[3]!.created_at, type: 'credits.low_balance,member.added' });
    expect(since.map((e) => e.data.object.n)).to.deep.equal([3, 4, 5, 6]);
    const until = await eventsSeenBy(ctx.server, owner, org, { until: created[3]!.created_at, type: 'credits.low_balance,member.added' });
    expect(until.map((e) => e.data.object.n)).to.deep.include.members([0, 1, 2]);
    expect(until.map((e) => e.data.object.n)).to.not.include(3);
  });

  it('refuses an unknown type, a bad time and a foreign cursor with 400 naming the field', async () => {
    const unknown = await ctx.server.request('get', `/organizations/${org}/events`, { token: owner.token, query: { type: 'asset.exploded' } });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.message).to.match(/^query\.type: unknown event type "asset\.exploded"/);
    const time = await ctx.server.request('get', `/organizations/${org}/events`, { token: owner.token, query: { since: 'yesterday' } });
    expect(time.status).to.equal(400);
    expect(time.body.message).to.match(/^query\.since/);
    const cursor = await ctx.server.request('get', `/organizations/${org}/events`, { token: owner.token, query: { cursor: 'nonsense' } });
    expect(cursor.status).to.equal(400);
  });

  it('keeps 30 days: older events are neither listed nor resumable, and the hourly job deletes them', async () => {
    const old = await record('credits.low_balance', 100);
    const fresh = await record('credits.low_balance', 101);
    await ctx
      .db('events')
      .where({ id: old.id })
      .update({ created_at: ctx.db.raw(`now() - interval '31 days'`) });
    const listed = (await eventsSeenBy(ctx.server, owner, org)).map((e) => e.id);
    expect(listed).to.include(fresh.id);
    expect(listed).to.not.include(old.id);
    const resume = await ctx.server.request('get', `/organizations/${org}/events/stream`, { token: owner.token, headers: { 'Last-Event-ID': old.id } });
    expect(resume.status).to.equal(400);

    expect(allJobs.map((job) => job.name)).to.include(deleteOldEventsJob.name);
    expect(deleteOldEventsJob.cron).to.equal('23 * * * *');
    expect(await deleteOldEvents(ctx.db)).to.equal(1);
    expect(await ctx.db('events').where({ id: old.id })).to.have.length(0);
    expect(await ctx.db('events').where({ id: fresh.id })).to.have.length(1);
  });

  it('the hook point: subscribers get each event with its subject inside the recording transaction; a throwing one rolls the change back', async () => {
    const seen: { event: RecordedEvent; inTransaction: boolean }[] = [];
    const off = onEventRecorded('test', async (trx, event) => {
      seen.push({ event, inTransaction: trx.isTransaction === true });
      if ((event.data.object as { n?: number }).n === 13) throw new Error('fan-out refused');
    });
    try {
      const recorded = await ctx.db.transaction((trx) =>
        recordEvent(trx, {
          organizationId: org,
          type: 'asset.enriched',
          subject: { type: 'asset', id: '00000000-0000-4000-8000-000000000001' },
          object: { n: 12 },
        }),
      );
      expect(seen).to.have.length(1);
      expect(seen[0]).to.deep.equal({
        inTransaction: true,
        event: {
          id: recorded.id,
          type: 'asset.enriched',
          organization_id: org,
          created_at: recorded.created_at,
          data: { object: { n: 12 } },
          subject: { type: 'asset', id: '00000000-0000-4000-8000-000000000001' },
        },
      });
      let failure: unknown;
      await record('credits.low_balance', 13).catch((error: unknown) => (failure = error));
      expect((failure as Error).message).to.equal('fan-out refused');
      expect(await ctx.db('events').whereRaw(`data->'object'->>'n' = '13'`)).to.have.length(0);
    } finally {
      off();
    }
    // A resource type without a subject, or an organization type with one, is a programming error.
    let wrong: unknown;
    await ctx.db
      .transaction((trx) => recordEvent(trx, { organizationId: org, type: 'asset.enriched', subject: null, object: {} }))
      .catch((error: unknown) => (wrong = error));
    expect((wrong as Error).message).to.match(/needs the resource/);
  });

  it('an event about a resource that does not exist (or of an unknown type) is shown to no member', async () => {
    const member = newUser();
    await addMember(ctx.db, org, member, 'member');
    const ghost = await ctx.db.transaction((trx) =>
      recordEvent(trx, { organizationId: org, type: 'asset.enriched', subject: { type: 'asset', id: '00000000-0000-4000-8000-000000000002' }, object: {} }),
    );
    const odd = await ctx.db.transaction((trx) =>
      recordEvent(trx, { organizationId: org, type: 'asset.enriched', subject: { type: 'widget', id: 'x' }, object: {} }),
    );
    const ids = (await eventsSeenBy(ctx.server, member, org)).map((e) => e.id);
    expect(ids).to.not.include(ghost.id);
    expect(ids).to.not.include(odd.id);
  });

  it('the OpenAPI document has one `webhooks` entry per event type, each with its payload schema', () => {
    const document = openApiDocument('test') as any;
    expect(Object.keys(document.webhooks).sort()).to.deep.equal([...eventTypeList].sort());
    const payload = document.webhooks['generation.succeeded'].post.requestBody.content['application/json'].schema;
    expect(payload).to.deep.equal({ $ref: '#/components/schemas/GenerationSucceededEvent' });
    const schema = document.components.schemas.GenerationSucceededEvent;
    expect(schema.required).to.include.members(['id', 'type', 'organization_id', 'created_at', 'data']);
    expect(schema.properties.type).to.deep.equal({ type: 'string', enum: ['generation.succeeded'] });
    expect(document.paths['/organizations/{organization_id}/events/stream'].get.operationId).to.equal('streamOrganizationEvents');
  });
});
