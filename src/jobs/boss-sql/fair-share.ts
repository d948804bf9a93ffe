import { BOSS_SCHEMA } from '../boss.ts';

// The weighted fair share between organizations, in the fetch itself. pg-boss's fetch takes the
// queue's oldest job of the highest priority, so one organization's burst of 200 jobs is worked
// before a job another sent a moment later; its group limits can only cap a tenant (the old default
// held one to half of four slots per worker), never share what is free. Here each fetch takes the
// next job of the organization that has the least in flight on the queue for its weight
// (`job_weights.weight`, default 1): alone, an organization gets every slot of the fleet;
// with others active, each gets slots in proportion to its weight, measured by what it runs now.
// Jobs without an organization (group) count as one more tenant, the empty key.
//
// It stays one UPDATE, pg-boss's own, with its `next` CTE replaced:
// - the organizations with waiting jobs, by a skip scan of the index below (one probe each, not a
//   read of every waiting job), and what each runs now (the queue's active jobs, job_ops_active_i);
// - in order of in-flight ÷ weight, the first of them whose oldest due job of the highest priority
//   is not locked by another fetch (FOR UPDATE SKIP LOCKED inside the lateral probe, so only the
//   job taken is locked, and concurrent fetches each find one).
// An optional hard cap (JOB_ORGANIZATION_CONCURRENCY) leaves out organizations running that many.

/** The index of the fair claim's skip scan and of its per-organization probe (created by `release`, ./tables.ts). */
export const FAIR_CLAIM_INDEX: [string, string] = [
  'job_fair_claim_i',
  `(name, (coalesce(group_id, '')), priority DESC, created_on) WHERE state < 'active' AND NOT blocked`,
];

/** pg-boss's plain fetch of one job (no group options, batch size 1): its `next` CTE and the table it reads. */
const PLAIN_FETCH = new RegExp(
  `^\\s*WITH\\s+next AS \\(\\s*SELECT j\\.id\\s+FROM ${BOSS_SCHEMA}\\.(\\w+) j\\s+WHERE j\\.name = '([^']+)'\\s+AND j\\.state < 'active'\\s+AND NOT j\\.blocked\\s+AND j\\.start_after <= ${BOSS_SCHEMA}\\.job_now\\(\\)\\s+ORDER BY j\\.priority desc, j\\.created_on\\s+LIMIT 1\\s+FOR UPDATE OF j SKIP LOCKED\\s*\\)\\s*(?=UPDATE )`,
);

/** pg-boss's plain fetch of one job rewritten to the weighted fair claim; null for any other statement. */
export function fairShareFetch(text: string, cap: number | null): string | null {
  const match = PLAIN_FETCH.exec(text);
  if (!match) return null;
  const [whole, table, queue] = match as unknown as [string, string, string];
  const job = `${BOSS_SCHEMA}.${table}`;
  const waiting = `j.name = '${queue}' AND j.state < 'active' AND NOT j.blocked`;
  const capped = cap === null ? '' : `AND (q.k = '' OR coalesce(f.n, 0) < ${Math.floor(cap)})`;
  const next = `WITH RECURSIVE
      queued (k) AS (
        (SELECT coalesce(j.group_id, '') FROM ${job} j WHERE ${waiting} ORDER BY coalesce(j.group_id, '') LIMIT 1)
        UNION ALL
        SELECT (SELECT coalesce(j.group_id, '') FROM ${job} j WHERE ${waiting} AND coalesce(j.group_id, '') > q.k ORDER BY coalesce(j.group_id, '') LIMIT 1)
          FROM queued q WHERE q.k IS NOT NULL
      ),
      in_flight AS MATERIALIZED (
        SELECT coalesce(j.group_id, '') AS k, count(*)::int AS n FROM ${job} j WHERE j.name = '${queue}' AND j.state = 'active' GROUP BY 1
      ),
      next AS (
        SELECT c.id
          FROM (SELECT q.k
                  FROM queued q
                  LEFT JOIN in_flight f ON f.k = q.k
                  LEFT JOIN job_weights w ON w.organization_id = q.k
                 WHERE q.k IS NOT NULL ${capped}
                 ORDER BY coalesce(f.n, 0) / coalesce(w.weight, 1)::float8, q.k
                 OFFSET 0) r
          CROSS JOIN LATERAL (
            SELECT j.id FROM ${job} j
             WHERE ${waiting} AND coalesce(j.group_id, '') = r.k AND j.start_after <= ${BOSS_SCHEMA}.job_now()
             ORDER BY j.priority DESC, j.created_on
             LIMIT 1
             FOR UPDATE OF j SKIP LOCKED
          ) c
         LIMIT 1
      )
      `;
  return text.replace(whole, next);
}
