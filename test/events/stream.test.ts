import { expect } from 'chai';
import { signToken } from '../../src/auth/sign.ts';
import { recordEvent } from '../../src/core/events.ts';
import { createDb, type Db } from '../../src/db/knex.ts';
import { STREAMS_PER_CALLER } from '../../src/events/index.ts';
import { isolatedDatabase } from '../jobs/support.ts';
import { eventually } from '../support/eventually.ts';
import { TEST_JWT_SECRET } from '../support/config.ts';
import { addMember, createOrganization, newUser, type TestUser } from '../support/factories.ts';
import { spawnWeb, type WebChild } from '../support/processes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { follow } from '../support/sse.ts';

type Follower = Awaited<ReturnType<typeof follow>>;

/**
 * GET /organizations/{id}/events/stream across two web processes (this one and a child): exact
 * resumption with Last-Event-ID, ordering that survives out-of-order commits, the per-caller limit.
 */
describe('event stream (SSE): resumption, ordering, limits', function () {
  this.timeout(90_000);
  let server: TestServer;
  let other: WebChild;
  let db: Db;
  let owner: TestUser;
  let org: string;
  const open: Follower[] = [];

  before(async () => {
    const url = await isolatedDatabase();
    db = createDb(url, { max: 6 });
    server = await startTestServer({}, { databaseUrl: url });
    other = await spawnWeb({ DATABASE_URL: url });
    owner = newUser();
    org = await createOrganization(server, owner);
  });
  afterEach(async () => {
    for (const f of open.splice(0)) f.hangUp();
  });
  after(async () => {
    await other?.stop();
    await server?.stop();
    await db?.destroy();
  });

  const stream = async (base: string, user: TestUser, headers: Record<string, string> = {}, organization = org) => {
    const f = await follow(base, `/organizations/${organization}/events/stream`, user.token, headers);
    open.push(f);
    return f;
  };
  /** Records one organization-level event in a transaction of its own (the real writer); returns its id. */
  const record = async (n: number, organization = org) =>
    (await db.transaction((trx) => recordEvent(trx, { organizationId: organization, type: 'credits.low_balance', subject: null, object: { n } }))).id;
  const idsOf = (f: Follower) => f.events.map((e) => e.id!);

  it('disconnect after N events, reconnect to the other process with Last-Event-ID: exactly the rest, in order', async () => {
    const first = await stream(server.url, owner);
    expect(first.res.status).to.equal(200);
    expect(first.res.headers.get('content-type')).to.match(/^text\/event-stream/);
    const recorded: string[] = [];
    for (let i = 0; i < 10; i++) recorded.push(await record(i));
    // A stream opened without Last-Event-ID starts at its snapshot's xmin: while an older transaction
    // anywhere on the server is open (another suite's frozen worker), events committed just before it
    // opened (the organization's own) come too — at least once, never skipped. Those are not this test's.
    const ours = () => first.events.filter((e) => recorded.includes(e.id!));
    await eventually('the first events arrived', async () => ours().length >= 4);
    first.hangUp();
    const lastSeen = ours()[3]!;
    expect(
      ours()
        .slice(0, 4)
        .map((e) => e.id),
    ).to.deep.equal(recorded.slice(0, 4));
    expect(lastSeen).to.deep.include({ event: 'credits.low_balance' });
    expect(lastSeen.data).to.deep.include({ id: lastSeen.id, type: 'credits.low_balance', organization_id: org, data: { object: { n: 3 } } });

    // Written while nobody listens.
    for (let i = 10; i < 16; i++) recorded.push(await record(i));
    const resumed = await stream(other.url, owner, { 'Last-Event-ID': lastSeen.id! });
    expect(resumed.res.status).to.equal(200);
    // A sentinel after the rest: once it is there, everything before it has been sent.
    const sentinel = await record(99);
    await eventually('the resumed stream reached the sentinel', async () => resumed.events.at(-1)?.id === sentinel);
    expect(idsOf(resumed)).to.deep.equal([...recorded.slice(4), sentinel]);
    expect(resumed.events.map((e) => e.data.data.object.n)).to.deep.equal([4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 99]);

    // Each process has one LISTEN connection for all its streams.
    const listening = await db.raw(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN organization_events'`,
    );
    expect(listening.rows[0].n).to.equal(2);
  });

  it('an event whose transaction commits after a later one is delivered first, never skipped (also on resumption)', async () => {
    const live = await stream(server.url, owner);
    const elsewhere = await stream(other.url, owner);
    const late = await db.transaction();
    try {
      // The late transaction takes the lower sequence number, then stays open…
      const early = await recordEvent(late, { organizationId: org, type: 'credits.low_balance', subject: null, object: { n: 'late' } });
      // …while a later one commits: it is visible (listed) but must wait behind the open one.
      const later = await record(1000);
      const listed = await server.request('get', `/organizations/${org}/events`, { token: owner.token, query: { limit: 1 } });
      expect(listed.body.items[0].id).to.equal(later);
      // Give both streams their wake-up (the later commit's NOTIFY) while the late transaction is open.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await late.commit();
      for (const f of [live, elsewhere]) {
        await eventually('both events arrived', async () => f.events.length >= 2);
        expect(idsOf(f)).to.deep.equal([early.id, later]);
      }
      // Resuming after the late one gives the later one: its position is the order the stream used.
      const resumed = await stream(other.url, owner, { 'Last-Event-ID': early.id });
      const sentinel = await record(1001);
      await eventually('the resumed stream reached the sentinel', async () => resumed.events.at(-1)?.id === sentinel);
      expect(idsOf(resumed)).to.deep.equal([later, sentinel]);
    } finally {
      if (!late.isCompleted()) await late.rollback();
    }
  });

  it('a rolled-back event is never sent, and does not hold back the ones after it', async () => {
    const live = await stream(server.url, owner);
    const failed = await db.transaction();
    await recordEvent(failed, { organizationId: org, type: 'credits.low_balance', subject: null, object: { n: 'rolled back' } });
    const after = await record(2000);
    await failed.rollback();
    await eventually('the committed event arrived', async () => live.events.some((e) => e.id === after));
    expect(live.events.map((e) => e.data.data.object.n)).to.deep.equal([2000]);
  });

  it('type filter on the stream; Last-Event-ID of another organization or malformed is 400; a non-member gets 404', async () => {
    const only = await stream(server.url, owner, {});
    const filtered = await follow(server.url, `/organizations/${org}/events/stream?type=member.added`, owner.token);
    open.push(filtered);
    const member = newUser();
    await addMember(db, org, member, 'admin');
    const joined = await db.transaction((trx) =>
      recordEvent(trx, { organizationId: org, type: 'member.added', subject: null, object: { user_id: member.id } }),
    );
    await record(3000);
    await eventually('the filtered stream got the member event', async () => filtered.events.length === 1);
    await eventually('the full stream got both', async () => only.events.length === 2);
    expect(idsOf(filtered)).to.deep.equal([joined.id]);

    const elsewhere = await createOrganization(server, owner);
    const foreign = await record(1, elsewhere);
    const refused = await server.request('get', `/organizations/${org}/events/stream`, { token: owner.token, headers: { 'Last-Event-ID': foreign } });
    expect(refused.status).to.equal(400);
    expect(refused.body.code).to.equal('validation_failed');
    expect(refused.body.message).to.match(/^Last-Event-ID: /);
    const malformed = await server.request('get', `/organizations/${org}/events/stream`, { token: owner.token, headers: { 'Last-Event-ID': 'nope' } });
    expect(malformed.status).to.equal(400);
    expect((await server.request('get', `/organizations/${org}/events/stream`, { token: newUser().token })).status).to.equal(404);
  });

  it(`at most ${STREAMS_PER_CALLER} open streams per caller across processes (429 beyond); closing one frees its slot`, async () => {
    const caller = newUser();
    await addMember(db, org, caller, 'member');
    const held: Follower[] = [];
    for (let i = 0; i < STREAMS_PER_CALLER; i++) held.push(await stream(i % 2 ? other.url : server.url, caller));
    for (const f of held) expect(f.res.status).to.equal(200);
    const refused = await server.request('get', `/organizations/${org}/events/stream`, { token: caller.token });
    expect(refused.status).to.equal(429);
    expect(refused.body.code).to.equal('rate_limited');
    // Per caller: someone else still gets a stream.
    expect((await stream(server.url, owner)).res.status).to.equal(200);
    held[1]!.hangUp();
    const again = await eventually('a slot is free again', async () => {
      const f = await stream(server.url, caller);
      if (f.res.status === 200) return f;
      f.hangUp();
      return null;
    });
    expect(again.res.status).to.equal(200);
  });

  // Issue 36: a stream opened with a token expiring in 4 s still delivered events at 7 s.
  it('ends at the token’s exp; reconnecting with a fresh token and Last-Event-ID misses nothing', async () => {
    const member = newUser();
    await addMember(db, org, member, 'member');
    const shortLived = { ...member, token: signToken(TEST_JWT_SECRET, { sub: member.id, email: member.email, name: member.name, ttlSeconds: 3 }) };
    const first = await stream(server.url, shortLived);
    expect(first.res.status).to.equal(200);
    const before = await record(5000);
    await eventually('the first event arrived', async () => first.events.some((e) => e.id === before));
    // Nothing else ends it: the member stays, the process runs. It ends by itself at exp.
    await first.ended;
    const seen = first.events.at(-1)!.id!;
    // Written after it ended, before the client came back.
    const missed = [await record(5001), await record(5002)];
    expect((await server.request('get', `/organizations/${org}/events`, { token: shortLived.token })).status).to.equal(401);
    const resumed = await stream(server.url, member, { 'Last-Event-ID': seen });
    const sentinel = await record(5003);
    await eventually('the resumed stream reached the sentinel', async () => resumed.events.at(-1)?.id === sentinel);
    const after = idsOf(resumed);
    expect(after.slice(after.indexOf(missed[0]!))).to.deep.equal([...missed, sentinel]);
    expect(after).to.not.include(seen);
    // Every event recorded from the first on reached the client exactly once across the two streams.
    const all = [...idsOf(first), ...after];
    for (const id of [before, ...missed, sentinel])
      expect(
        all.filter((x) => x === id),
        id,
      ).to.have.length(1);
  });

  it('a member removed from the organization is disconnected', async () => {
    const leaving = newUser();
    await addMember(db, org, leaving, 'member');
    const f = await stream(other.url, leaving);
    expect(f.res.status).to.equal(200);
    await db('organization_members').where({ organization_id: org, user_id: leaving.id }).delete();
    await record(4000); // the next batch reads the membership again
    await f.ended;
    expect(f.events).to.deep.equal([]);
  });
});
