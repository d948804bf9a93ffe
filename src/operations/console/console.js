// The operator job console (served by ./serve.ts at GET /ops): a client of the /ops JSON API.
// No framework and no build step: the DOM is built with h() from text (never innerHTML), the view
// and its filters live in the URL hash (#/jobs?state=failed), the token in sessionStorage.

const TOKEN_KEY = 'ops-console-token';
const ORG_KEY = 'ops-console-organization';
const ME_KEY = 'ops-console-me';
const LIVE_KEY = 'ops-console-live';
// How often live views poll (conditional GETs: a 304 changes nothing on screen). Tests shorten it.
const LIVE_MS = () => Number(sessionStorage.getItem('ops-console-live-ms')) || 5000;
const ACTIVE_STATES = ['created', 'retry', 'active'];
const WINDOWS = { '1h': 3600e3, '24h': 86400e3, '7d': 7 * 86400e3, '31d': 31 * 86400e3 };
const $ = (id) => document.getElementById(id);

// DOM helpers

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'object' ? child : String(child));
  }
  return node;
}

function setAttributes(node, attrs) {
  for (const [key, value] of Object.entries(attrs)) {
    if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, '');
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  return node;
}

/** An HTML element: h('td', { class: 'num' }, 'text', child, [more]). */
const h = (tag, attrs = {}, ...children) => append(setAttributes(document.createElement(tag), attrs), children);
/** An SVG element. */
const s = (tag, attrs = {}, ...children) => append(setAttributes(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs), children);

const when = (ts) => (ts ? new Date(ts).toLocaleString() : '—');
const age = (seconds) => {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 120) return `${Math.round(seconds)}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
};
const json = (value) => h('pre', {}, JSON.stringify(value, null, 2));
const stateBadge = (state, testid) => h('span', { class: `state state-${state}`, 'data-testid': testid }, state);
const table = (testid, headers, rows) =>
  h(
    'table',
    { 'data-testid': testid },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((name) => h('th', {}, name)),
      ),
    ),
    h('tbody', {}, rows),
  );
// An organization's view of an operator's pause carries no reason (operators' reasons are internal).
const pauseReason = (pause) => pause.reason ?? 'paused by the service';
const cells = (values) =>
  values.map((value) => (value instanceof Node ? h('td', {}, value) : h('td', typeof value === 'number' ? { class: 'num' } : {}, value ?? '—')));
const input = (name, label, value, attrs = {}) => h('label', {}, label, h('input', { name, value: value ?? '', 'data-testid': `filter-${name}`, ...attrs }));
const select = (name, label, options, value) =>
  h(
    'label',
    {},
    label,
    h(
      'select',
      { name, 'data-testid': `filter-${name}` },
      options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)),
    ),
  );
const jobLink = (id, text = id.slice(0, 8)) => h('a', { href: `#/jobs/${id}`, class: 'mono', title: id, 'data-testid': 'job-link' }, text);
const jobsLink = (params, text) => h('a', { href: `#/jobs?${new URLSearchParams(params)}` }, text);
const stuckBadge = () =>
  h('span', { class: 'state state-stuck', 'data-testid': 'job-stuck', title: 'running past its kind’s expected time on a live worker' }, 'stuck');
/** How long a running job's attempt has run, against its kind's expected time. */
const running = (job) => (job.running_for_seconds === null ? null : `${age(job.running_for_seconds)} (${age(job.expected_seconds)})`);

// Local datetime-local values ⇄ ISO timestamps.
const toIso = (local) => (local ? new Date(local).toISOString() : undefined);
function toLocal(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// Messages, session, API

function message(id, text) {
  $(id).textContent = text ?? '';
  $(id).hidden = !text;
}
const showError = (error) => message('error', error.code ? `${error.code}: ${error.message}` : String(error.message ?? error));
const notice = (text) => message('notice', text);
function clearMessages() {
  message('error');
  message('notice');
}

const token = () => sessionStorage.getItem(TOKEN_KEY);
const organization = () => sessionStorage.getItem(ORG_KEY) || undefined;

class ApiError extends Error {
  constructor(status, code, text) {
    super(text);
    this.status = status;
    this.code = code;
  }
}

/** Answers of live reads by URL, with their ETag: a poll sends it back and a 304 reuses the answer. */
const conditional = new Map();
/** Set when a read during a poll got a new answer (200): only then is the view drawn again. */
let changed = false;

/** Calls the operator API with the session's token; throws the platform's Error body as an ApiError. */
async function api(method, path, { query = {}, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, String(value));
  const headers = { authorization: `Bearer ${token()}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const known = method === 'GET' ? conditional.get(url.href) : undefined;
  if (known) headers['if-none-match'] = known.etag;
  // no-store: the ETag is ours to send (the browser's cache would answer 200 from itself).
  const response = await fetch(url, { method, headers, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 304 && known) return known.data;
  changed = true;
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data?.code ?? `http_${response.status}`, data?.message ?? response.statusText);
  const etag = response.headers.get('etag');
  if (etag && method === 'GET') conditional.set(url.href, { etag, data });
  return data;
}

/** The signed-in caller as the console sees them (GET /ops/me): an operator, or an owner or admin of some organizations. */
const me = () => JSON.parse(sessionStorage.getItem(ME_KEY) ?? 'null');
const isOperator = () => me()?.operator === true;

/** Runs an operator action, shows its outcome, then renders the view again so the new state shows. */
async function act(run, describe) {
  clearMessages();
  try {
    notice(describe(await run()));
  } catch (error) {
    showError(error);
  }
  await render();
}

// Views: each returns the nodes to show.

/** "123 jobs" when counted; "≈ 1.2M jobs (at least 10,001 counted)" when estimated. */
function totalText(total) {
  if (total.exact) return `${total.value.toLocaleString()} jobs`;
  const rounded = total.value >= 1e6 ? `${(total.value / 1e6).toFixed(1)}M` : total.value >= 1e3 ? `${Math.round(total.value / 1e3)}k` : String(total.value);
  return `≈ ${rounded} jobs (estimated; at least ${total.at_least.toLocaleString()} counted)`;
}

/** The organization filter: free text for operators, a choice of their own organizations for everyone else. */
function organizationField(value) {
  if (isOperator()) return input('organization_id', 'Organization', value);
  return select(
    'organization_id',
    'Organization',
    me().organizations.map((o) => [o.id, o.name]),
    value,
  );
}

/** Bulk retry, cancel or delete of what the list shows (its filter and window): preview the count, then start a durable bulk action. */
function bulkPanel(filter) {
  const body = { filter: Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined && v !== '')) };
  const action = h(
    'select',
    { 'data-testid': 'bulk-action' },
    ['retry', 'cancel', 'delete'].map((a) => h('option', { value: a }, a)),
  );
  const reason = h('input', { placeholder: 'reason (required, audited)', size: 30, 'data-testid': 'bulk-reason' });
  const outcome = h('span', { class: 'muted', 'data-testid': 'bulk-count' });
  const start = h('button', { type: 'button', class: 'primary', disabled: true, 'data-testid': 'bulk-start' }, 'Start');
  const preview = async () => {
    clearMessages();
    start.disabled = true;
    try {
      const answer = await api('POST', '/ops/bulk-actions/preview', { body: { ...body, action: action.value } });
      outcome.textContent = `${answer.count} jobs would be ${action.value === 'retry' ? 'retried' : action.value === 'cancel' ? 'cancelled' : 'deleted'}`;
      start.disabled = answer.count === 0;
    } catch (error) {
      showError(error);
    }
  };
  action.addEventListener('change', () => {
    outcome.textContent = '';
    start.disabled = true;
  });
  start.addEventListener('click', async () => {
    clearMessages();
    try {
      if (!reason.value.trim()) throw new Error('a bulk action needs a reason');
      const { bulk_action } = await api('POST', '/ops/bulk-actions', { body: { ...body, action: action.value, reason: reason.value.trim() } });
      navigate(`#/bulk/${bulk_action.id}`);
    } catch (error) {
      showError(error);
    }
  });
  return h(
    'details',
    { class: 'bulk', 'data-testid': 'bulk-panel' },
    h('summary', {}, 'Bulk action on the jobs this filter matches'),
    h('div', { class: 'toolbar' }, action, reason, h('button', { type: 'button', 'data-testid': 'bulk-preview', onclick: preview }, 'Preview'), outcome, start),
  );
}

/** A bulk action's progress, drawn again by the live refresh while it runs. */
async function bulkView(id) {
  const { bulk_action: bulk } = await api('GET', `/ops/bulk-actions/${encodeURIComponent(id)}`);
  const finished = bulk.done + bulk.skipped;
  const abort = () =>
    act(
      () => api('POST', `/ops/bulk-actions/${id}/abort`, { body: {} }),
      () => 'abort requested: the bulk action stops after its current batch',
    );
  return [
    h('h2', {}, `Bulk ${bulk.action} `, h('span', { class: 'mono' }, bulk.id.slice(0, 8)), ' ', stateBadge(bulk.state, 'bulk-state')),
    h('p', {}, h('progress', { value: finished, max: Math.max(1, bulk.total), 'data-testid': 'bulk-progress' })),
    h(
      'p',
      { 'data-testid': 'bulk-done' },
      `${finished} of ${bulk.total} worked: ${bulk.done} ${bulk.action === 'delete' ? 'deleted' : 'done'}, ${bulk.skipped} skipped`,
    ),
    bulk.skipped_reasons.length > 0 &&
      h(
        'ul',
        { 'data-testid': 'bulk-skipped' },
        bulk.skipped_reasons.map((r) => h('li', {}, `${r.count}: ${r.reason}`)),
      ),
    h(
      'dl',
      { class: 'facts' },
      [
        ['Reason', bulk.reason],
        ['By', bulk.created_by],
        ['Created', when(bulk.created_at)],
        ['Finished', when(bulk.finished_at)],
        ['Filter', h('code', {}, JSON.stringify(bulk.filter))],
      ].map(([term, detail]) => [h('dt', {}, term), h('dd', {}, detail ?? '—')]),
    ),
    bulk.state === 'running' && h('button', { type: 'button', 'data-testid': 'bulk-abort', onclick: abort }, 'Abort'),
  ];
}

async function bulkListView(params) {
  const page = await api('GET', '/ops/bulk-actions', { query: { organization_id: organization(), cursor: params.get('cursor') ?? undefined } });
  return [
    h('h2', {}, 'Bulk actions'),
    table(
      'bulk-table',
      ['Bulk action', 'Action', 'State', 'Progress', 'Reason', 'Created'],
      page.items.map((bulk) =>
        h(
          'tr',
          { 'data-testid': 'bulk-row' },
          cells([
            h('a', { href: `#/bulk/${bulk.id}`, class: 'mono' }, bulk.id.slice(0, 8)),
            bulk.action,
            stateBadge(bulk.state),
            `${bulk.done + bulk.skipped} / ${bulk.total}`,
            bulk.reason,
            when(bulk.created_at),
          ]),
        ),
      ),
    ),
    page.next_cursor && h('a', { href: `#/bulk?${new URLSearchParams({ cursor: page.next_cursor })}` }, 'Next page'),
  ];
}

/** The fairness panel: each organization's running and waiting jobs against what it may run at once. */
async function organizationsView() {
  const { fairness, items } = await api('GET', '/ops/organizations', { query: { organization_id: organization() } });
  const rule =
    fairness.mode === 'share'
      ? `An organization may hold ${fairness.per_worker} of each worker’s slots per queue (${Math.round(fairness.share * 100)}%, JOB_ORGANIZATION_SHARE).`
      : `An organization may run ${fairness.fixed_limit} jobs at once per queue across all workers (JOB_ORGANIZATION_CONCURRENCY).`;
  return [
    h('h2', {}, 'Organizations'),
    h('p', { class: 'muted', 'data-testid': 'fairness-rule' }, rule),
    table(
      'organizations-table',
      ['Organization', 'Queue', 'Running', 'Waiting', 'Limit', 'Fleet slots', ''],
      items.flatMap((org) =>
        org.queues.map((q) =>
          h(
            'tr',
            { 'data-testid': 'organization-row', 'data-organization': org.organization_id, 'data-queue': q.queue },
            cells([
              org.name ?? org.organization_id,
              q.queue,
              q.active,
              q.queued,
              q.limit ?? '—',
              q.fleet_slots,
              q.capped ? h('span', { class: 'state state-stuck', 'data-testid': 'organization-capped' }, 'at its limit') : '',
            ]),
          ),
        ),
      ),
    ),
  ];
}

async function jobsView(params) {
  const filter = Object.fromEntries(params);
  const organizationId = filter.organization_id ?? organization();
  const query = { ...filter, organization_id: organizationId, window: undefined, limit: 50 };
  if (!filter.from && filter.window && filter.window !== '24h') query.from = new Date(Date.now() - WINDOWS[filter.window]).toISOString();
  const page = await api('GET', '/ops/jobs', { query });

  const form = h(
    'form',
    { class: 'filters', 'data-testid': 'jobs-filters' },
    input('queue', 'Queue', filter.queue),
    select('state', 'State', [['', 'any'], ...['created', 'retry', 'active', 'completed', 'cancelled', 'failed'].map((st) => [st, st])], filter.state ?? ''),
    organizationField(organizationId),
    select(
      'origin',
      'Origin',
      [
        ['', 'work (default)'],
        ['cron', 'cron jobs'],
        ['internal', 'pg-boss internal'],
        ['all', 'all'],
      ],
      filter.origin ?? '',
    ),
    select(
      'window',
      'Window',
      [
        ['1h', 'last hour'],
        ['24h', 'last 24 hours'],
        ['7d', 'last 7 days'],
        ['31d', 'last 31 days'],
      ],
      filter.window ?? '24h',
    ),
    input('from', 'From', toLocal(filter.from), { type: 'datetime-local' }),
    input('to', 'To', toLocal(filter.to), { type: 'datetime-local' }),
    input('resource_id', 'Resource id', filter.resource_id),
    input('request_id', 'Request id', filter.request_id),
    h(
      'label',
      { class: 'inline', title: 'running past their kind’s expected time on a live worker' },
      h('input', { type: 'checkbox', name: 'stuck', value: 'true', checked: filter.stuck === 'true', 'data-testid': 'filter-stuck' }),
      'stuck only',
    ),
    h('button', { type: 'submit', class: 'primary', 'data-testid': 'jobs-apply' }, 'Apply'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of new FormData(form)) {
      const text = String(value).trim();
      if (text) next.set(key, key === 'from' || key === 'to' ? toIso(text) : text);
    }
    if (next.get('window') === '24h') next.delete('window');
    sessionStorage.setItem(ORG_KEY, next.get('organization_id') ?? '');
    navigate(`#/jobs?${next}`);
  });

  const rows = page.items.map((job) =>
    h(
      'tr',
      { 'data-testid': 'job-row', 'data-job-id': job.id },
      cells([
        jobLink(job.id),
        job.queue,
        [stateBadge(job.state, 'job-row-state'), job.stuck && [' ', stuckBadge()]],
        running(job),
        job.organization_id,
        `${job.attempts} / ${job.retry_limit + 1}`,
        when(job.created_at),
        job.request_id,
      ]),
    ),
  );
  const nextPage = page.next_cursor && new URLSearchParams({ ...filter, from: page.window.from, to: page.window.to, cursor: page.next_cursor });
  const firstPage = new URLSearchParams(filter);
  firstPage.delete('cursor');
  return [
    h('h2', {}, 'Jobs'),
    form,
    h('p', { class: 'muted', 'data-testid': 'jobs-total' }, `${totalText(page.total)} created ${when(page.window.from)} – ${when(page.window.to)}`),
    !filter.cursor &&
      bulkPanel({ ...filter, cursor: undefined, window: undefined, organization_id: organizationId, from: page.window.from, to: page.window.to }),
    table('jobs-table', ['Job', 'Queue', 'State', 'Running (expected)', 'Organization', 'Attempts', 'Created', 'Request'], rows),
    page.items.length === 0 && h('p', { class: 'muted' }, 'No jobs match.'),
    h(
      'p',
      { class: 'pager' },
      filter.cursor && h('a', { href: `#/jobs?${firstPage}`, 'data-testid': 'jobs-first' }, 'First page'),
      nextPage && h('a', { href: `#/jobs?${nextPage}`, 'data-testid': 'jobs-next' }, 'Next page'),
    ),
  ];
}

let pollTimer;

async function jobView(id) {
  const { job, history, timeline, actions } = await api('GET', `/ops/jobs/${encodeURIComponent(id)}`);
  const reason = h('input', { id: 'action-reason', placeholder: 'reason (recorded in the audit log)', size: 40, 'data-testid': 'action-reason' });
  const reasonBody = () => (reason.value.trim() ? { reason: reason.value.trim() } : {});
  const post = (verb) => () =>
    act(
      () => api('POST', `/ops/jobs/${id}/${verb}`, { body: reasonBody() }),
      (answer) => `${verb}: the job is now ${answer.job.state}${verb === 'retry-now' ? ', due now' : ''}`,
    );
  const reveal = () =>
    act(
      async () => {
        if (!reason.value.trim()) throw new Error('revealing a payload needs a reason');
        const revealed = await api('POST', `/ops/jobs/${id}/reveal`, { body: reasonBody() });
        return JSON.stringify(revealed.payload);
      },
      (payload) => `revealed payload (recorded): ${payload}`,
    );
  // While the job may still change, look again shortly (one timer at a time; render() clears it).
  if (ACTIVE_STATES.includes(job.state)) {
    const shown = location.hash;
    pollTimer = setTimeout(() => location.hash === shown && render(), 2000);
  }
  const failed = job.state === 'failed';
  return [
    h(
      'h2',
      {},
      'Job ',
      h('span', { class: 'mono', 'data-testid': 'job-id' }, job.id),
      ' ',
      stateBadge(job.state, 'job-state'),
      job.stuck && [' ', stuckBadge()],
    ),
    job.stuck &&
      h(
        'p',
        { class: 'alert', 'data-testid': 'job-stuck-notice' },
        `Stuck: its attempt has run ${age(job.running_for_seconds)}, past the ${age(job.expected_seconds)} its kind usually takes, on a live worker. Cancel it to stop its handler.`,
      ),
    h(
      'div',
      { class: 'toolbar' },
      h('button', { type: 'button', 'data-testid': 'job-refresh', onclick: () => render() }, 'Refresh'),
      h(
        'button',
        { type: 'button', class: 'primary', 'data-testid': 'job-retry', disabled: !['failed', 'cancelled'].includes(job.state), onclick: post('retry') },
        'Retry',
      ),
      h(
        'button',
        {
          type: 'button',
          'data-testid': 'job-retry-now',
          title: 'start it now instead of waiting out its retry backoff',
          disabled: !(['created', 'retry'].includes(job.state) && new Date(job.start_after).getTime() > Date.now()),
          onclick: post('retry-now'),
        },
        'Retry now',
      ),
      h('button', { type: 'button', 'data-testid': 'job-cancel', disabled: !ACTIVE_STATES.includes(job.state), onclick: post('cancel') }, 'Cancel'),
      reason,
    ),
    h(
      'dl',
      { class: 'facts' },
      [
        ['Queue', jobsLink({ queue: job.queue }, job.queue)],
        ['Organization', job.organization_id ?? 'platform'],
        ['Request', job.request_id && jobsLink({ request_id: job.request_id }, job.request_id)],
        ['Attempts', `${job.attempts} (retry limit ${job.retry_limit})`],
        ['Priority', job.priority],
        ['Created', when(job.created_at)],
        ['Start after', when(job.start_after)],
        ['Started', when(job.started_at)],
        ['Running for', running(job)],
        ['Completed', when(job.completed_at)],
        ['Dead letter', job.dead_letter],
        ['Source', job.source && [job.source.queue, ' ', jobLink(job.source.job_id)]],
      ].map(([term, detail]) => [h('dt', {}, term), h('dd', {}, detail ?? '—')]),
    ),
    h('h3', {}, 'Payload'),
    job.redacted.length > 0 &&
      h(
        'p',
        { class: 'muted' },
        `Redacted: ${job.redacted.join(', ')}. `,
        h('button', { type: 'button', 'data-testid': 'job-reveal', onclick: reveal }, 'Reveal (needs a reason)'),
      ),
    h('div', { 'data-testid': 'job-payload' }, json(job.payload)),
    h('h3', {}, failed ? 'Error' : 'Output'),
    h('div', { 'data-testid': 'job-output' }, json(job.output)),
    h('h3', {}, 'Attempts'),
    table(
      'job-history',
      ['#', 'Worker', 'Started', 'Ended', 'Duration', 'Outcome', 'Error'],
      history.map((a) =>
        h(
          'tr',
          {},
          cells([
            a.attempt,
            a.worker_id?.slice(0, 8),
            when(a.started_at),
            when(a.ended_at),
            a.duration_ms === null ? '—' : `${a.duration_ms} ms`,
            stateBadge(a.outcome),
            a.error && `${a.error.name ? `${a.error.name}: ` : ''}${a.error.message}`,
          ]),
        ),
      ),
    ),
    h('h3', {}, 'Timeline'),
    h(
      'ol',
      { 'data-testid': 'job-timeline' },
      timeline.map((event) => h('li', {}, h('span', { class: 'muted' }, when(event.at)), ' ', h('strong', {}, event.event), ' ', event.detail)),
    ),
    h('h3', {}, 'Operator actions'),
    table(
      'job-actions',
      ['At', 'Who', 'Role', 'Action', 'Reason'],
      actions.map((a) => h('tr', {}, cells([when(a.at), a.actor_id, a.actor_role, a.action, a.reason]))),
    ),
  ];
}

function sparkline(points) {
  if (points.length === 0) return h('span', { class: 'muted' }, 'no data');
  const [width, height] = [180, 36];
  const max = Math.max(1, ...points.flatMap((p) => [p.created, p.completed, p.failed]));
  const x = (i) => (points.length < 2 ? width / 2 : 1 + (i * (width - 2)) / (points.length - 1));
  const y = (value) => height - 1 - (value * (height - 2)) / max;
  const sum = (key) => points.reduce((total, p) => total + p[key], 0);
  return s(
    'svg',
    { class: 'throughput', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'data-testid': 'throughput' },
    s('title', {}, `${points.length} minutes: ${sum('created')} created, ${sum('completed')} completed, ${sum('failed')} failed (peak ${max}/min)`),
    ['created', 'completed', 'failed'].map((key) =>
      s('polyline', { class: key, points: points.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ') }),
    ),
  );
}

/** A toolbar of checkboxes and selects whose values live in the hash (e.g. #/queues?hours=6). */
function toolbar(path, controls) {
  const bar = h('form', { class: 'toolbar' }, controls, h('button', { type: 'submit', 'data-testid': 'refresh' }, 'Refresh'));
  bar.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of new FormData(bar)) if (value) next.set(key, String(value));
    navigate(`#/${path}?${next}`);
  });
  return bar;
}
const checkbox = (name, label, params) =>
  h(
    'label',
    { class: 'inline' },
    h('input', { type: 'checkbox', name, value: 'true', checked: params.get(name) === 'true', 'data-testid': `filter-${name}` }),
    label,
  );

async function queuesView(params) {
  const hours = params.get('hours') ?? '1';
  const [{ items, alerts }, webhooks] = await Promise.all([
    api('GET', '/ops/queues', {
      query: { hours, dead_letters: params.get('dead_letters') ?? undefined, internal: params.get('internal') ?? undefined, organization_id: organization() },
    }),
    api('GET', '/ops/webhooks', { query: { organization_id: organization() } }),
  ]);
  const states = ['created', 'retry', 'active', 'deferred', 'failed', 'completed', 'cancelled'];
  return [
    h('h2', {}, 'Queues'),
    toolbar('queues', [
      select(
        'hours',
        'Throughput over',
        ['1', '6', '24', '48'].map((n) => [n, `${n} h`]),
        hours,
      ),
      checkbox('dead_letters', 'dead-letter queues', params),
      checkbox('internal', 'pg-boss internal queues', params),
    ]),
    h(
      'ul',
      { 'data-testid': 'queue-alerts' },
      alerts.map((alert) => h('li', { class: 'alert' }, h('strong', {}, alert.queue), `: ${alert.message}`, alert.job_id && [' ', jobLink(alert.job_id)])),
    ),
    alerts.length === 0 && h('p', { class: 'muted' }, 'No alerts.'),
    h(
      'p',
      { 'data-testid': 'queues-webhooks' },
      h('a', { href: '#/webhooks' }, 'Webhooks'),
      `: ${webhooks.backlog.pending} deliveries pending, ${webhooks.failing_endpoints.length} failing endpoints, ${webhooks.disabled_endpoints} disabled`,
    ),
    table(
      'queues-table',
      ['Queue', ...states, 'Stuck', 'Oldest ready', 'Workers', 'Paused', 'Throughput (created / completed / failed)'],
      items.map((queue) =>
        h(
          'tr',
          { 'data-testid': 'queue-row', 'data-queue': queue.name },
          cells([
            jobsLink({ queue: queue.name }, queue.name),
            ...states.map((state) => queue.counts[state]),
            queue.stuck_attempts ? jobsLink({ queue: queue.name, stuck: 'true' }, String(queue.stuck_attempts)) : 0,
            age(queue.oldest_ready_seconds),
            queue.live_workers,
            queue.pauses.map(pauseReason).join('; ') || '—',
            sparkline(queue.throughput),
          ]),
        ),
      ),
    ),
  ];
}

async function workersView(params) {
  const { items } = await api('GET', '/ops/workers', { query: { include_stopped: params.get('include_stopped') ?? undefined } });
  return [
    h('h2', {}, 'Workers'),
    toolbar('workers', [checkbox('include_stopped', 'also stopped and lost (24 h)', params)]),
    table(
      'workers-table',
      ['Worker', 'Host', 'PID', 'Version', 'Status', 'Queues', 'Concurrency', 'In flight', 'Started', 'Last heartbeat'],
      items.map((worker) =>
        h(
          'tr',
          { 'data-testid': 'worker-row' },
          cells([
            h('span', { class: 'mono', title: worker.id }, worker.id.slice(0, 8)),
            worker.host,
            worker.pid,
            worker.version,
            stateBadge(worker.status),
            h('span', { title: worker.queues.join('\n') }, `${worker.queues.length} queues`),
            worker.concurrency,
            worker.in_flight.length ? worker.in_flight.map((job) => [jobLink(job.job_id, job.queue), ' ']) : worker.jobs_in_flight,
            when(worker.started_at),
            when(worker.last_heartbeat_at),
          ]),
        ),
      ),
    ),
  ];
}

async function schedulesView(params) {
  const page = await api('GET', '/ops/schedules', { query: { organization_id: organization(), cursor: params.get('cursor') ?? undefined } });
  const trigger = (key) => () =>
    act(
      () => api('POST', `/ops/schedules/${encodeURIComponent(key)}/trigger`),
      (answer) => `triggered ${answer.schedule}${answer.job_id ? `: job ${answer.job_id}` : ''}${answer.run_id ? `, run ${answer.run_id}` : ''}`,
    );
  return [
    h('h2', {}, 'Schedules'),
    table(
      'schedules-table',
      ['Schedule', 'Title', 'Queue', 'Organization', 'Cron', 'Enabled', 'Last run', 'Next run', 'Paused', ''],
      page.items.map((schedule) =>
        h(
          'tr',
          { 'data-testid': 'schedule-row', 'data-key': schedule.key },
          cells([
            h('span', { class: 'mono' }, schedule.key),
            schedule.title,
            jobsLink({ queue: schedule.queue }, schedule.queue),
            schedule.organization_id,
            `${schedule.cron} (${schedule.timezone})`,
            schedule.enabled ? 'yes' : 'no',
            when(schedule.last_run_at),
            when(schedule.next_run_at),
            schedule.paused && pauseReason(schedule.paused),
            h('button', { type: 'button', 'data-testid': 'schedule-trigger', onclick: trigger(schedule.key) }, 'Trigger'),
          ]),
        ),
      ),
    ),
    page.next_cursor && h('a', { href: `#/schedules?${new URLSearchParams({ cursor: page.next_cursor })}`, 'data-testid': 'schedules-next' }, 'Next page'),
  ];
}

async function pausesView(params) {
  const all = params.get('all') === 'true';
  const page = await api('GET', '/ops/pauses', {
    query: { organization_id: organization(), open: all ? 'false' : undefined, cursor: params.get('cursor') ?? undefined },
  });
  const resume = (id) => () =>
    act(
      () => api('POST', `/ops/pauses/${id}/resume`),
      (answer) => `resumed; ${answer.restored} deferred jobs are due again`,
    );
  const form = h(
    'form',
    { class: 'filters', 'data-testid': 'pause-form' },
    select(
      'scope',
      'Scope',
      [
        ['queue', 'queue'],
        ['organization', 'organization on a queue'],
        ['schedule', 'schedule'],
      ],
      'queue',
    ),
    input('queue', 'Queue'),
    input('organization_id', 'Organization', organization()),
    input('schedule', 'Schedule (cron:… or task:…)'),
    input('reason', 'Reason', '', { required: true }),
    input('expires_at', 'Expires', '', { type: 'datetime-local' }),
    h('button', { type: 'submit', class: 'primary', 'data-testid': 'pause-create' }, 'Pause'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const body = {};
    for (const [key, value] of new FormData(form)) if (String(value).trim()) body[key] = key === 'expires_at' ? toIso(String(value)) : String(value).trim();
    act(
      () => api('POST', '/ops/pauses', { body }),
      (answer) => `paused; ${answer.deferred} queued jobs deferred`,
    );
  });
  return [
    h('h2', {}, 'Pauses'),
    toolbar('pauses', [checkbox('all', 'also ended pauses', params)]),
    table(
      'pauses-table',
      ['Scope', 'Target', 'Reason', 'By', 'Since', 'Expires', 'In force', ''],
      page.items.map((pause) =>
        h(
          'tr',
          { 'data-testid': 'pause-row' },
          cells([
            pause.scope,
            [pause.queue, pause.organization_id, pause.schedule].filter(Boolean).join(' / '),
            pauseReason(pause),
            pause.created_by ?? 'an operator',
            when(pause.created_at),
            when(pause.expires_at),
            pause.open ? 'yes' : `no (resumed ${when(pause.resumed_at)})`,
            pause.open && pause.can_resume ? h('button', { type: 'button', 'data-testid': 'pause-resume', onclick: resume(pause.id) }, 'Resume') : '',
          ]),
        ),
      ),
    ),
    page.next_cursor && h('a', { href: `#/pauses?${new URLSearchParams({ ...Object.fromEntries(params), cursor: page.next_cursor })}` }, 'Next page'),
    h('h3', {}, 'New pause'),
    form,
  ];
}

const DELIVERY_QUEUE = 'webhooks.deliver';

/** Webhook delivery health (GET /ops/webhooks): the backlog, failing endpoints with their last error and next attempt, disabled endpoints. */
async function webhooksView() {
  const health = await api('GET', '/ops/webhooks', { query: { organization_id: organization() } });
  const { backlog } = health;
  const lastFailure = (endpoint) => [
    endpoint.last_error ?? '—',
    endpoint.last_attempt_at && h('span', { class: 'muted' }, ` (${when(endpoint.last_attempt_at)})`),
  ];
  // The delivery's job page shows its attempts and can retry it now (as for any job).
  const failedJob = (endpoint) => endpoint.last_failed_job_id && jobLink(endpoint.last_failed_job_id, 'last failed delivery');
  return [
    h('h2', {}, 'Webhooks'),
    h(
      'p',
      { 'data-testid': 'webhook-backlog' },
      `${backlog.pending.toLocaleString()} deliveries pending`,
      backlog.pending > 0 && `, the oldest ${age(backlog.oldest_pending_seconds)} old`,
      ' · ',
      jobsLink({ queue: DELIVERY_QUEUE, state: 'retry' }, 'waiting for a retry'),
      ' · ',
      jobsLink({ queue: DELIVERY_QUEUE }, 'all delivery jobs'),
    ),
    h('h3', {}, 'Failing endpoints'),
    health.failing_endpoints.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'webhook-failing-none' }, 'No endpoint is failing.')
      : table(
          'webhook-failing-table',
          ['Endpoint', 'Host', 'Organization', 'Failing since', 'Pending', 'Last error', 'Next attempt', ''],
          health.failing_endpoints.map((endpoint) =>
            h(
              'tr',
              { 'data-testid': 'webhook-failing-row', 'data-endpoint': endpoint.endpoint_id },
              cells([
                h('span', { class: 'mono', title: endpoint.endpoint_id }, endpoint.endpoint_id.slice(0, 8)),
                endpoint.host,
                endpoint.organization_id,
                `${when(endpoint.failing_since)} (${age((Date.now() - new Date(endpoint.failing_since).getTime()) / 1000)})`,
                endpoint.pending,
                h('span', { 'data-testid': 'webhook-last-error' }, lastFailure(endpoint)),
                h('span', { 'data-testid': 'webhook-next-attempt' }, when(endpoint.next_attempt_at)),
                failedJob(endpoint),
              ]),
            ),
          ),
        ),
    h('h3', {}, `Disabled endpoints (${health.disabled_endpoints})`),
    health.disabled.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'webhook-disabled-none' }, 'No endpoint was disabled.')
      : table(
          'webhook-disabled-table',
          ['Endpoint', 'Host', 'Organization', 'Disabled', 'Why', 'Last error', ''],
          health.disabled.map((endpoint) =>
            h(
              'tr',
              { 'data-testid': 'webhook-disabled-row', 'data-endpoint': endpoint.endpoint_id },
              cells([
                h('span', { class: 'mono', title: endpoint.endpoint_id }, endpoint.endpoint_id.slice(0, 8)),
                endpoint.host,
                endpoint.organization_id,
                when(endpoint.disabled_at),
                endpoint.disabled_reason,
                h('span', { 'data-testid': 'webhook-last-error' }, lastFailure(endpoint)),
                failedJob(endpoint),
              ]),
            ),
          ),
        ),
    h(
      'p',
      { class: 'muted' },
      'Nothing is attempted for a disabled endpoint until an owner or admin of its organization enables it again (PATCH …/webhook-endpoints/{id} {"enabled": true}) and redelivers what it missed.',
    ),
  ];
}

// Routing

let renders = 0;
let liveTimer;
/** Views that follow the jobs as they change: polled with conditional GETs while "Live" is on. */
const LIVE_VIEWS = new Set(['jobs', 'queues', 'workers', 'organizations', 'bulk', 'webhooks']);

/** The view the hash names: its function and whether it refreshes live. */
function route() {
  const [path, search = ''] = location.hash.slice(1).split('?');
  const [name = 'jobs', id] = path.split('/').filter(Boolean);
  const params = new URLSearchParams(search);
  const views = {
    jobs: () => (id ? jobView(id) : jobsView(params)),
    queues: queuesView,
    workers: workersView,
    schedules: schedulesView,
    pauses: pausesView,
    organizations: organizationsView,
    bulk: () => (id ? bulkView(id) : bulkListView(params)),
    webhooks: webhooksView,
  };
  const known = name in views ? name : 'jobs';
  // A job's own page has its own refresh; a deeper page of a list is a fixed window.
  const live = LIVE_VIEWS.has(known) && !(known === 'jobs' && id) && !params.get('cursor');
  return { name: known, view: () => views[known](params), live };
}

/** Shows the view the hash names (signed in), or the sign-in form. */
async function render() {
  clearTimeout(pollTimer);
  clearTimeout(liveTimer);
  const ticket = ++renders;
  const signedIn = Boolean(token());
  $('sign-in').hidden = signedIn;
  document.querySelector('nav').hidden = !signedIn;
  if (!signedIn) return void $('view').replaceChildren();
  try {
    if (!me()) await identify();
  } catch (error) {
    if (error.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    showError(error);
    if (error.status === 401) await render();
    return;
  }
  drawHeader();
  const { name, view, live } = route();
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('current', link.hash === `#/${name}`);
  if (!isOperator() && !organization()) return void $('view').replaceChildren(noOrganization());
  try {
    const nodes = await view();
    if (ticket !== renders) return;
    $('view').replaceChildren(...nodes.filter(Boolean));
    liveStatus(live);
    if (live) scheduleLive(ticket, view);
  } catch (error) {
    if (ticket !== renders) return;
    if (error.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    showError(error);
    if (error.status === 401) await render();
  }
}

const liveOn = () => sessionStorage.getItem(LIVE_KEY) !== 'off';

/** Polls the view: draws it again only when an answer changed, and never under the cursor of someone typing in it. */
function scheduleLive(ticket, view) {
  if (!liveOn()) return;
  liveTimer = setTimeout(async () => {
    if (ticket !== renders) return;
    const editing = $('view').contains(document.activeElement) && ['INPUT', 'SELECT', 'TEXTAREA'].includes(document.activeElement.tagName);
    const open = $('view').querySelector('details[open]');
    if (!editing && !open) {
      changed = false;
      try {
        const nodes = await view();
        if (ticket !== renders) return;
        if (changed) $('view').replaceChildren(...nodes.filter(Boolean));
        liveStatus(true);
      } catch (error) {
        if (ticket !== renders) return;
        showError(error);
      }
    }
    scheduleLive(ticket, view);
  }, LIVE_MS());
}

function liveStatus(live) {
  $('live-status').textContent = live ? (liveOn() ? `live · checked ${new Date().toLocaleTimeString()}` : 'live refresh off') : '';
}

/** Who signed in (GET /ops/me): an operator sees every organization; an owner or admin lands on their first organization. */
async function identify() {
  const identity = await api('GET', '/ops/me');
  sessionStorage.setItem(ME_KEY, JSON.stringify(identity));
  if (!identity.operator) {
    const ids = identity.organizations.map((o) => o.id);
    if (!ids.includes(organization())) sessionStorage.setItem(ORG_KEY, ids[0] ?? '');
  }
}

/** The header for who is signed in: a tenant picks among their organizations and has no workers page (operators only). */
function drawHeader() {
  const identity = me();
  $('nav-workers').hidden = !identity.operator;
  const picker = $('organization-picker');
  picker.hidden = identity.operator || identity.organizations.length === 0;
  if (picker.hidden) return void picker.replaceChildren();
  const choice = h(
    'select',
    { 'data-testid': 'organization-switch', 'aria-label': 'Organization' },
    identity.organizations.map((o) => h('option', { value: o.id, selected: o.id === organization() }, `${o.name} (${o.role})`)),
  );
  choice.addEventListener('change', () => {
    sessionStorage.setItem(ORG_KEY, choice.value);
    navigate('#/jobs');
  });
  picker.replaceChildren(choice);
  $('live-toggle').checked = liveOn();
}

function noOrganization() {
  return h(
    'section',
    { 'data-testid': 'no-organization' },
    h('h2', {}, 'No organization to show'),
    h(
      'p',
      {},
      'The job console shows an organization’s jobs to its owners and admins (jobs.manage), and every organization’s to operators of the service. This account holds jobs.manage in no organization: ask an owner of yours for the admin role, or sign in with an operator token.',
    ),
  );
}

/** Goes to `hash`; renders again when it is already the current one (hashchange would not fire). */
function navigate(hash) {
  clearMessages();
  if (location.hash === hash) render();
  else location.hash = hash;
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = new FormData(event.target)
    .get('token')
    .trim()
    .replace(/^Bearer\s+/i, '');
  sessionStorage.setItem(TOKEN_KEY, value);
  sessionStorage.removeItem(ME_KEY);
  conditional.clear();
  event.target.reset();
  navigate(location.hash || '#/jobs');
});
$('sign-out').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(ME_KEY);
  sessionStorage.removeItem(ORG_KEY);
  conditional.clear();
  clearMessages();
  render();
});
$('live-toggle').addEventListener('change', (event) => {
  sessionStorage.setItem(LIVE_KEY, event.target.checked ? 'on' : 'off');
  render();
});
window.addEventListener('hashchange', () => {
  clearMessages();
  render();
});
render();
