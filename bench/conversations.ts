/**
 * GET /conversations on an organization with 100k conversations and 1k members: first page vs
 * page 1000 (keyset cursor), latency percentiles and requests/s, plus the query plan.
 * Run: npm run bench:conversations   (embedded PostgreSQL, throw-away database; ~40 s)
 */
import { signToken } from '../src/auth/sign.ts';
import { listConversations } from '../src/conversations/list.ts';
import { actorFor } from '../src/access/index.ts';
import { createDb } from '../src/db/knex.ts';
import { encodeCursor } from '../src/core/pagination.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startWeb } from '../src/web.ts';
import { TEST_JWT_SECRET, testConfig } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { readFlags } from './support/bench.ts';

// --name=value flags as BENCH_NAME; `--help` prints the comment above.
readFlags();

const CONVERSATIONS = 100_000;
const MEMBERS = 1_000;
const LIMIT = 50;
const PAGE = 1000;
const org = 'bench-org';

const database = await createTestDatabase();
const db = createDb(database.url, { max: 4 });
const config = testConfig();
const web = await startWeb(config, database.url, createLogger(config, 'bench'));
const address = web.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

try {
  const seeded = Date.now();
  await db.raw(`INSERT INTO users (id, email, name) SELECT 'u' || g, 'u' || g || '@bench.test', 'User ' || g FROM generate_series(0, ${MEMBERS - 1}) g`);
  await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) VALUES ('${org}', 'Bench', 'bench', 'u0')`);
  await db.raw(
    `INSERT INTO organization_members (organization_id, user_id, role) SELECT '${org}', 'u' || g, CASE WHEN g = 0 THEN 'owner' ELSE 'member' END FROM generate_series(0, ${MEMBERS - 1}) g`,
  );
  // Creators spread over all members; 30% open to the workspace; one conversation a minute going back ~70 days.
  await db.raw(`INSERT INTO conversations (organization_id, created_by_id, title, visibility, created_at, updated_at)
    SELECT '${org}', 'u' || (g % ${MEMBERS}), 'Conversation ' || g, CASE WHEN g % 10 < 3 THEN 'workspace' ELSE 'private' END,
           now() - (g || ' minutes')::interval, now() - (g || ' minutes')::interval
    FROM generate_series(1, ${CONVERSATIONS}) g`);
  // 20k per-user grants on private conversations.
  await db.raw(`INSERT INTO resource_grants (organization_id, resource_type, resource_id, user_id, role, granted_by_id)
    SELECT '${org}', 'chat_conversation', c.id, 'u' || ((hashtext(c.id::text) & 1023) % ${MEMBERS}), 'viewer', c.created_by_id
    FROM conversations c WHERE c.visibility = 'private' AND random() < 0.29 ON CONFLICT DO NOTHING`);
  await db.raw('ANALYZE');
  console.log(`seeded ${CONVERSATIONS} conversations, ${MEMBERS} members in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);

  const callers = [
    { label: 'owner (reads all 100k)', id: 'u0', page: PAGE },
    // A member reads ~30k rows (own, workspace-visible, granted): page 500 is about as deep as they go.
    { label: 'member u42 (reads own + workspace + granted)', id: 'u42', page: 500 },
  ];
  for (const caller of callers) {
    const token = signToken(TEST_JWT_SECRET, { sub: caller.id, ttlSeconds: 3600 });
    const cursor = await cursorOfPage(caller.id, caller.page);
    console.log(`\n== ${caller.label}, limit ${LIMIT}`);
    for (const [name, c] of [
      ['first page', undefined],
      [`page ${caller.page}`, cursor],
    ] as const) {
      if (name !== 'first page' && !c) {
        console.log(`${name}: the caller has fewer pages`);
        continue;
      }
      const url = `${base}/conversations?organization_id=${org}&limit=${LIMIT}${c ? `&cursor=${c}` : ''}`;
      const got = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      const body = (await got.json()) as { items: unknown[] };
      if (got.status !== 200 || body.items.length !== LIMIT) throw new Error(`${name}: ${got.status} ${JSON.stringify(body).slice(0, 200)}`);
      const latencies = await sequential(url, token, 100);
      const rps = await throughput(url, token, 8, 3000);
      console.log(
        `${name.padEnd(10)}  p50 ${pct(latencies, 50)} ms  p95 ${pct(latencies, 95)} ms  max ${pct(latencies, 100)} ms  |  ${rps.toFixed(0)} req/s (8 concurrent, 3 s)`,
      );
    }
    await explain(caller.id, cursor, caller.page);
  }
} finally {
  await web.stop();
  await db.destroy();
  await database.dispose();
}

/** The cursor the API would hand out after page n-1, computed in SQL from the same readable set. */
async function cursorOfPage(userId: string, page: number): Promise<string | undefined> {
  const readable =
    userId === 'u0'
      ? 'true'
      : `(c.created_by_id = ? OR c.visibility <> 'private' OR EXISTS (SELECT 1 FROM resource_grants g WHERE g.resource_type = 'chat_conversation' AND g.resource_id = c.id AND g.user_id = ?))`;
  const row = await db.raw(
    `SELECT c.created_at::text AS at, c.id FROM conversations c WHERE c.organization_id = ? AND c.deleted_at IS NULL AND c.schedule_id IS NULL AND ${readable}
     ORDER BY c.created_at DESC, c.id DESC OFFSET ? LIMIT 1`,
    userId === 'u0' ? [org, (page - 1) * LIMIT - 1] : [org, userId, userId, (page - 1) * LIMIT - 1],
  );
  const last = row.rows[0];
  return last ? encodeCursor([last.at, last.id]) : undefined;
}

async function sequential(url: string, token: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    out.push(performance.now() - start);
  }
  return out.sort((a, b) => a - b);
}

async function throughput(url: string, token: string, concurrency: number, ms: number): Promise<number> {
  const end = Date.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        done++;
      }
    }),
  );
  return done / (ms / 1000);
}

function pct(sorted: number[], p: number): string {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!.toFixed(1);
}

/** EXPLAIN ANALYZE of the exact SQL the list runs (captured from knex), first page and page 1000. */
async function explain(userId: string, cursor: string | undefined, pageNumber: number) {
  for (const c of cursor ? [undefined, cursor] : [undefined]) {
    let captured: { sql: string; bindings: unknown[] } | undefined;
    const listener = (q: { sql: string; bindings: unknown[] }) => {
      if (q.sql.includes('from "conversations"')) captured = q;
    };
    db.on('query', listener);
    await listConversations(db, actorFor(db, { userId }), {
      organization_id: org,
      filter: 'all',
      include_scheduled: false,
      deleted: false,
      limit: LIMIT,
      cursor: c,
    });
    db.off('query', listener);
    if (!captured) continue;
    // knex reports native $n placeholders; raw() wants `?`.
    const plan = await db.raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${captured.sql.replace(/\$\d+/g, '?')}`, captured.bindings as never);
    const lines = (plan.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']);
    const highlights = lines.filter((l) => /Scan|Limit|Sort|Execution Time|Rows Removed/.test(l)).slice(0, 8);
    console.log(`  plan (${c ? `page ${pageNumber}` : 'first page'}):\n    ${highlights.map((l) => l.trim()).join('\n    ')}`);
  }
}
