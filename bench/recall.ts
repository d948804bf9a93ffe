/**
 * GET /conversations/recall (full-text search over messages, src/conversations/recall.ts) on an
 * organization with BENCH_MESSAGES messages (default 1,000,000) in 20k conversations, 200 members:
 * 30% of the conversations open to the workspace, the rest private, ~29% of those shared with one
 * member. Message text is drawn from a word list with a skewed (Zipf-like) distribution, so there
 * are common terms (in most messages), mid-frequency ones and a rare one.
 * For the owner (administers: no per-row access check) and a plain member (own + workspace +
 * granted), with a selective term, a common term and a two-word query: p50/p95/p99 of the HTTP
 * request (default page, limit 50), and the EXPLAIN (ANALYZE, BUFFERS) summary of the query the API runs.
 * Baseline in the same run, interleaved in BENCH_ROUNDS rounds: bare Koa 3 + pg.Pool answering one
 * single-row SELECT, one request at a time; the ratio is the median over rounds of (case p50 / baseline p50).
 * Goal (issue): p95 ≤ 50 ms.
 * Env: BENCH_MESSAGES (1000000), BENCH_REQUESTS per case (200), BENCH_CASE_SECONDS (time cap per
 * case, 30), BENCH_ROUNDS (4), BENCH_PLAN=1 prints the whole plans.
 * Run: npm run bench:recall   (embedded PostgreSQL, throw-away database; seeding 1M messages ~1–2 min)
 */
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { actorFor } from '../src/access/index.ts';
import { signToken } from '../src/auth/sign.ts';
import { recall } from '../src/conversations/recall.ts';
import { startBareKoa } from './support/bare-koa.ts';
import { createDb } from '../src/db/knex.ts';
import type { Deps } from '../src/platform/deps.ts';
import { createLogger } from '../src/platform/logger.ts';
import { startWeb } from '../src/web.ts';
import { TEST_JWT_SECRET, testConfig } from '../test/support/config.ts';
import { createTestDatabase } from '../test/support/database.ts';
import { readFlags } from './support/bench.ts';

// --name=value flags as BENCH_NAME; `--help` prints the comment above.
readFlags();

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 1_000_000);
const CONVERSATIONS = Math.max(1, Math.min(20_000, Math.ceil(MESSAGES / 50)));
const MEMBERS = 200;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const CASE_SECONDS = Number(process.env.BENCH_CASE_SECONDS ?? 30);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
const BARE_PER_ROUND = 50;
const GOAL_P95_MS = 50;
const org = 'bench-org';
const member = 'u42';

/**
 * Words of a work chat, most frequent first: message words are drawn at index ⌊N·r²⌋ (r uniform),
 * so the first words land in most messages and the last in a few percent. No English stop words
 * (they never reach the index): a message is only these words, plus filler (stop words) between.
 */
const WORDS = `project deploy customer meeting release budget design report team server database invoice
  schedule feature review contract marketing campaign analytics dashboard pipeline roadmap sprint ticket
  vendor quarter forecast revenue onboarding training hiring candidate interview policy security audit
  compliance backup migration latency outage incident postmortem rollback staging production cluster
  kubernetes container docker terraform network firewall certificate domain email newsletter webinar
  conference travel expense receipt payroll benefits holiday vacation office laptop monitor keyboard
  printer license subscription pricing discount quote proposal partner reseller support escalation
  feedback survey interviewee persona wireframe prototype mockup figma typography palette illustration
  logo brand website landing homepage checkout cart payment refund chargeback fraud shipping warehouse
  inventory supplier procurement logistics freight customs tariff export import regulation lawyer
  trademark patent copyright privacy consent cookie tracking attribution funnel conversion retention
  churn cohort segment experiment hypothesis metric baseline variance regression model training dataset
  label annotation accuracy precision recall embedding vector index query cache queue worker cron
  webhook endpoint token session password login signup invitation permission role admin owner editor
  viewer workspace folder document spreadsheet presentation slide agenda minutes summary transcript
  recording video podcast article blog draft outline chapter translation localization accessibility
  performance benchmark profiling memory thread process kernel driver firmware battery sensor antenna
  satellite drone robot warehouse forklift pallet container vessel harbor airport runway hangar glacier
  volcano orchard vineyard harvest greenhouse irrigation compost beehive lighthouse observatory telescope`
  .split(/\s+/)
  .filter(Boolean);
const FILLER = ['the', 'a', 'and', 'to', 'of', 'for', 'with', 'on', 'is', 'we', 'it', 'this'];
/** In about one message in 5,000: the selective term. */
const RARE = 'quokka';

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
};
const median = (values: number[]) => pct(values, 50);
const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;

const config = testConfig({
  NODE_ENV: 'production',
  RATE_LIMIT_PER_MINUTE: '100000000',
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
  LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
});
const loadBefore = loadavg()[0]!;
const database = await createTestDatabase();
const db = createDb(database.url, { max: 3 });
const web = await startWeb(config, database.url, createLogger(config, 'bench'));
const base = `http://127.0.0.1:${(web.server.address() as AddressInfo).port}`;

// Baseline: bare Koa + pg (bench/support/bare-koa.ts).
const bareKoa = await startBareKoa(database.url);
const bareUrl = bareKoa.url;

async function seed(): Promise<void> {
  const started = performance.now();
  const step = (what: string) => console.log(`  ${what}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await db.raw(`INSERT INTO users (id, email, name) SELECT 'u' || g, 'u' || g || '@bench.test', 'User ' || g FROM generate_series(0, ${MEMBERS - 1}) g`);
  await db.raw(`INSERT INTO organizations (id, name, slug, created_by_id) VALUES ('${org}', 'Bench', 'bench', 'u0')`);
  await db.raw(
    `INSERT INTO organization_members (organization_id, user_id, role) SELECT '${org}', 'u' || g, CASE WHEN g = 0 THEN 'owner' ELSE 'member' END FROM generate_series(0, ${MEMBERS - 1}) g`,
  );
  // Creators spread over all members; 30% open to the workspace; one conversation every 5 minutes going back ~70 days.
  await db.raw(`INSERT INTO conversations (organization_id, created_by_id, title, visibility, created_at, updated_at, message_count)
    SELECT '${org}', 'u' || (g % ${MEMBERS}), 'Conversation ' || g, CASE WHEN g % 10 < 3 THEN 'workspace' ELSE 'private' END,
           now() - (g * 5 || ' minutes')::interval, now() - (g * 5 || ' minutes')::interval, ${Math.ceil(MESSAGES / CONVERSATIONS)}
    FROM generate_series(0, ${CONVERSATIONS - 1}) g`);
  // ~29% of the private ones shared with one member as viewer (as bench/conversations.ts does).
  await db.raw(`INSERT INTO resource_grants (organization_id, resource_type, resource_id, user_id, role, granted_by_id)
    SELECT '${org}', 'chat_conversation', c.id, 'u' || ((hashtext(c.id::text) & 1023) % ${MEMBERS}), 'viewer', c.created_by_id
    FROM conversations c WHERE c.visibility = 'private' AND random() < 0.29 ON CONFLICT DO NOTHING`);
  await db.raw(`CREATE TABLE bench_conversation_numbers AS
    SELECT (row_number() OVER (ORDER BY created_at DESC, id) - 1)::int AS n, id, created_by_id, created_at FROM conversations`);
  await db.raw('ALTER TABLE bench_conversation_numbers ADD PRIMARY KEY (n)');
  // Text: two fragments per message, from pools of 4999 and 5003 fragments (25M distinct pairs), each fragment 3–14 words
  // drawn from WORDS at index ⌊N·r²⌋ with filler between. The rare word is in one fragment of the first pool (~1 message in 5,000).
  for (const [table, size] of [
    ['bench_fragment_a', 4999],
    ['bench_fragment_b', 5003],
  ] as const) {
    await db.raw(
      `CREATE TABLE ${table} AS
       SELECT n, CASE WHEN n = 0 AND ? THEN ? || ' ' ELSE '' END || (
                SELECT string_agg(w[1 + floor(array_length(w, 1) * power(random(), 2))::int] || ' ' || f[1 + floor(random() * array_length(f, 1))::int], ' ')
                  FROM generate_series(1, 3 + n % 12), (SELECT ?::text[] AS w, ?::text[] AS f) lists) AS content
         FROM generate_series(0, ${size - 1}) n`,
      [table === 'bench_fragment_a', RARE, WORDS, FILLER],
    );
    await db.raw(`ALTER TABLE ${table} ADD PRIMARY KEY (n)`);
  }
  step(`${CONVERSATIONS} conversations, ${MEMBERS} members, grants, text fragments`);

  // Bulk load without the secondary indexes, then build them (the same definitions) once: far quicker than 1M index inserts.
  const { rows: indexes } = await db.raw(`SELECT indexname, indexdef FROM pg_indexes
    WHERE tablename = 'conversation_messages' AND indexname <> 'conversation_messages_pkey'`);
  for (const index of indexes as { indexname: string }[]) await db.raw(`DROP INDEX ${index.indexname}`);
  const CHUNK = 50_000;
  const chunks = Array.from({ length: Math.ceil(MESSAGES / CHUNK) }, (_, i) => [i * CHUNK, Math.min(MESSAGES, (i + 1) * CHUNK) - 1] as const);
  // Two connections (two cores): the generated tsvector column (to_tsvector) is most of the cost.
  await Promise.all(
    [0, 1].map(async (lane) => {
      for (const [from, to] of chunks.filter((_, i) => i % 2 === lane)) {
        await db.raw(
          `INSERT INTO conversation_messages (conversation_id, organization_id, role, content, created_by_id, created_at)
           SELECT c.id, '${org}', CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END, a.content || ' ' || b.content,
                  CASE WHEN g % 2 = 0 THEN c.created_by_id END, c.created_at + (g / ${CONVERSATIONS}) * interval '1 minute'
             FROM generate_series(?::int, ?::int) g
             JOIN bench_conversation_numbers c ON c.n = g % ${CONVERSATIONS}
             JOIN bench_fragment_a a ON a.n = g % 4999
             JOIN bench_fragment_b b ON b.n = g % 5003`,
          [from, to],
        );
      }
    }),
  );
  step(`${MESSAGES} messages inserted`);
  for (const index of indexes as { indexname: string; indexdef: string }[]) {
    await db.raw(`SET maintenance_work_mem = '256MB'; ${index.indexdef}`);
    step(`index ${index.indexname} built`);
  }
  await db.raw('DROP TABLE bench_conversation_numbers');
  await db.raw('DROP TABLE bench_fragment_a, bench_fragment_b');
  await db.raw('VACUUM ANALYZE');
  step('VACUUM ANALYZE done');
}

async function timed(url: string, token?: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return performance.now() - started;
}

interface Case {
  label: string;
  userId: string;
  q: string;
  token: string;
  url: string;
  latencies: number[];
  ratios: number[];
  spent: number;
  hits: number;
}

/** EXPLAIN (ANALYZE, BUFFERS) of the ranking query recall() runs (captured from knex; the snippet query after it is by primary key). */
async function explain(c: Case): Promise<string[]> {
  let captured: { sql: string; bindings: unknown[] } | undefined;
  const listener = (q: { sql: string; bindings: unknown[] }) => {
    if (q.sql.includes('ts_rank')) captured = q;
  };
  db.on('query', listener);
  await recall({ db } as unknown as Deps, actorFor(db, { userId: c.userId }), { organization_id: org, q: c.q, limit: 50 });
  db.off('query', listener);
  if (!captured) return ['(no query captured)'];
  const plan = await db.raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${captured.sql.replace(/\$\d+/g, '?')}`, captured.bindings as never);
  return (plan.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']);
}

try {
  console.log(`seeding ${MESSAGES} messages in ${CONVERSATIONS} conversations (load average ${loadBefore.toFixed(2)})`);
  const seeding = performance.now();
  await seed();
  console.log(`seeded in ${((performance.now() - seeding) / 1000).toFixed(1)} s`);

  const common = WORDS[0]!;
  const pair = `${WORDS[20]} ${WORDS[60]}`;
  const queries = [
    { label: `selective "${RARE}"`, q: RARE },
    { label: `common "${common}"`, q: common },
    { label: `two words "${pair}"`, q: pair },
  ];
  for (const { label, q } of queries) {
    const { rows } = await db.raw(
      `SELECT count(*)::int AS n FROM conversation_messages WHERE organization_id = ? AND search @@ websearch_to_tsquery('english', ?)`,
      [org, q],
    );
    console.log(`  ${label.padEnd(32)} matches ${rows[0].n} of ${MESSAGES} messages`);
  }
  const cases: Case[] = [];
  for (const [who, userId] of [
    ['owner', 'u0'],
    [`member ${member}`, member],
  ] as const) {
    const token = signToken(TEST_JWT_SECRET, { sub: userId, ttlSeconds: 3600 });
    for (const { label, q } of queries) {
      const url = `${base}/conversations/recall?organization_id=${org}&q=${encodeURIComponent(q)}`;
      const first = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      const body = (await first.json()) as { items: unknown[] };
      if (first.status !== 200) throw new Error(`${who} ${label}: ${first.status} ${JSON.stringify(body).slice(0, 200)}`);
      cases.push({ label: `${who}, ${label}`, userId, q, token, url, latencies: [], ratios: [], spent: 0, hits: body.items.length });
    }
  }

  const bareMs: number[] = [];
  for (let i = 0; i < 20; i++) await timed(bareUrl);
  for (let round = 0; round < ROUNDS; round++) {
    const roundBare: number[] = [];
    for (let i = 0; i < BARE_PER_ROUND; i++) roundBare.push(await timed(bareUrl));
    bareMs.push(...roundBare);
    for (const c of cases) {
      const count = Math.floor(REQUESTS / ROUNDS) + (round < REQUESTS % ROUNDS ? 1 : 0);
      const latencies: number[] = [];
      for (let i = 0; i < count && c.spent < (CASE_SECONDS * 1000 * (round + 1)) / ROUNDS; i++) {
        const took = await timed(c.url, c.token);
        latencies.push(took);
        c.spent += took;
      }
      if (latencies.length === 0) continue;
      c.latencies.push(...latencies);
      c.ratios.push(median(latencies) / median(roundBare));
    }
  }

  console.log(`\n== GET /conversations/recall (limit 50), sequential requests, ${ROUNDS} rounds interleaved with the baseline`);
  console.log(
    `baseline bare Koa + pg SELECT            p50 ${ms(pct(bareMs, 50))}  p95 ${ms(pct(bareMs, 95))}  p99 ${ms(pct(bareMs, 99))}  (n=${bareMs.length})`,
  );
  for (const c of cases) {
    const p95 = pct(c.latencies, 95);
    console.log(
      `${c.label.padEnd(40)} p50 ${ms(pct(c.latencies, 50))}  p95 ${ms(p95)}  p99 ${ms(pct(c.latencies, 99))}  (n=${c.latencies.length}, ${c.hits} hits on page 1)  ${median(c.ratios).toFixed(1)}× baseline p50  goal p95 ≤ ${GOAL_P95_MS} ms: ${p95 <= GOAL_P95_MS ? 'met' : 'NOT MET'}`,
    );
  }
  console.log('\n== plans (EXPLAIN ANALYZE, BUFFERS of the SQL recall() runs)');
  for (const c of cases) {
    const lines = await explain(c);
    const highlights = lines
      .map((l) => l.trim())
      .filter((l) => /Limit|Sort|Scan|Join|Nested|Gather|Rows Removed|Buffers|Disk/.test(l))
      .filter((l, i, all) => l !== all[i - 1])
      .slice(0, 16);
    const shown = process.env.BENCH_PLAN ? lines : [...highlights, ...lines.filter((l) => l.startsWith('Execution Time'))];
    console.log(`${c.label}:\n    ${shown.join('\n    ')}`);
  }
  console.log(`\nload average at end ${loadavg()[0]!.toFixed(2)}`);
} finally {
  await web.stop();
  await bareKoa.stop();
  await db.destroy();
  await database.dispose();
}
