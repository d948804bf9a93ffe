// Dependency rules of the tree, checked by `npm run lint:deps` (part of `npm test`).
// Rules at 'error' hold and fail `npm test` when broken; the one 'warn' rule reports folder cycles that
// pass through the route framework (src/http), which no module-level cycle backs.

/** Domain folders of src/: business areas, each with its routes, schemas, services and SQL. */
const DOMAINS = [
  'access', 'activity', 'alert-policy', 'assets', 'billing', 'canvases', 'chat-models', 'connectors', 'conversations',
  'credits', 'events', 'generations', 'invitations', 'library', 'members', 'metering', 'operations', 'organizations', 'projects', 'reading', 'reports', 'roles',
  'scheduled-tasks', 'search', 'skill-listings', 'skills', 'social', 'users',
];
const domain = `^src/(${DOMAINS.join('|')})/`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'workers-not-http',
      severity: 'error',
      comment: 'Workers never load the HTTP layer, directly or through what they import: what both need lives in src/core.',
      from: { path: '^workers/' },
      to: { path: '^src/http/', reachable: true },
    },
    {
      name: 'metrics-not-http',
      severity: 'error',
      comment:
        'Workers serve metrics too (startWorkerMetrics), so src/metrics never imports the HTTP layer: the web app imports ' +
        'the metrics (middleware, registry), never the reverse.',
      from: { path: '^src/metrics/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'core-imports-no-src',
      severity: 'error',
      comment: 'src/core is what every layer shares, so it imports no other folder of src/.',
      from: { path: '^src/core/' },
      to: { path: '^src/', pathNot: '^src/core/' },
    },
    {
      name: 'credits-not-billing',
      severity: 'error',
      comment: 'Billing grants credits; credits never reach back into billing (periods come in through Deps.creditPeriods).',
      from: { path: '^src/credits/' },
      to: { path: '^src/billing/' },
    },
    {
      name: 'organizations-not-money',
      severity: 'error',
      comment:
        'Organizations know no money: creating one publishes `organizationCreated` (Deps), and billing\'s listener decides the ' +
        'starter grant in the same transaction. So organizations never import credits or billing (nor a billing provider); ' +
        'money may read an organization through its public module (a name for an alert, a row lock), never the reverse.',
      from: { path: '^src/organizations/' },
      to: { path: '^src/(credits|billing|providers/billing)/' },
    },
    {
      name: 'money-not-http',
      severity: 'error',
      comment:
        'Money (credits, metering, billing) never depends on the HTTP layer: what it shares with routes, such as the ' +
        'Idempotency-Key store, lives in the kernel (src/platform/idempotency.ts). Only a domain\'s HTTP face, its route ' +
        'declarations (routes.ts, webhook-route.ts), uses the route framework.',
      from: { path: '^src/(credits|metering|billing)/', pathNot: '^src/[^/]+/(routes|webhook-route)\\.ts$' },
      to: { path: '^src/http/' },
    },
    {
      name: 'roles-not-alert-policy',
      severity: 'error',
      comment: 'Alert policies name roles; roles never reach into alert policies (a deleted role leaves them by trigger).',
      from: { path: '^src/roles/' },
      to: { path: '^src/alert-policy/' },
    },
    {
      name: 'boss-sql-through-its-index',
      severity: 'error',
      comment:
        'Every statement on pg-boss\'s schema lives in src/jobs/boss-sql/ (test/jobs/module-boundaries.test.ts checks that no other file ' +
        'names the schema); the rest of the tree reaches it only through its index, the list of what it offers.',
      from: { path: '^(src|workers)/', pathNot: '^src/jobs/boss-sql/' },
      to: { path: '^src/jobs/boss-sql/', pathNot: '^src/jobs/boss-sql/index\\.ts$' },
    },
    {
      name: 'no-folder-cycles',
      severity: 'warn',
      comment:
        'No cycles between domain folders: each can be understood (and tested) with only what it imports; type-only imports ' +
        'count too (folder-scope rules cannot tell them apart, and a type cycle is a design cycle all the same). The one ' +
        'exception is the route framework, src/http: every domain declares its routes with it and it authorizes through ' +
        'the access module, so a cycle that passes through it is the framework\'s, not the domains\' — and no module is in a ' +
        'cycle (no-module-cycles). The one such folder cycle (access → members → http → access) stays a warning.',
      scope: 'folder',
      from: { path: `^src/(${DOMAINS.join('|')})$` },
      to: { path: `^src/(${DOMAINS.join('|')})$`, circular: true },
    },
    {
      name: 'no-module-cycles',
      severity: 'error',
      comment:
        'No module of src/ or workers/ reaches itself through its imports, lazy ones included: a job\'s definition names no ' +
        'handler (src/app/jobs.ts binds them), so handlers may import their payload types back. Type-only imports are ' +
        'erased at build and do not count.',
      from: { path: '^(src|workers)/' },
      to: {
        circular: true,
        dependencyTypesNot: ['type-only'],
        viaOnly: { dependencyTypesNot: ['type-only'] },
      },
    },
    {
      name: 'kernel-imports-no-domain',
      severity: 'error',
      comment:
        'The kernel (src/platform, src/jobs, src/db, src/core) is what every domain builds on; it imports no domain, so it can ' +
        'be read and tested alone. What it needs of a domain comes in through a port of Deps, built by the composition root.',
      from: { path: '^src/(platform|jobs|db|core)/' },
      to: { path: domain },
    },
    {
      name: 'composition-root-at-the-edge',
      severity: 'error',
      comment:
        'src/app/ builds the processes (dependencies, routes, bound jobs, release); only the entry points (src/main.ts, ' +
        'src/web.ts, workers/, scripts) import it — a domain or the kernel that did would depend on every domain.',
      from: { path: '^src/', pathNot: ['^src/app/', '^src/(main|web)\\.ts$'] },
      to: { path: '^src/app/' },
    },
    {
      name: 'domain-through-public-module',
      severity: 'error',
      comment: "A domain imports another domain only through that domain's public module, src/<domain>/index.ts.",
      from: { path: domain },
      to: { path: domain, pathNot: ['^src/$1/', `^src/(${DOMAINS.join('|')})/index\\.ts$`] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
