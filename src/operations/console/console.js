// The operator job console (served by ./serve.ts at GET /ops): a client of the /ops JSON API.
// No framework and no build step: the DOM is built with h() from text (never innerHTML), the view
// and its filters live in the URL hash (#/jobs?state=failed), the token in sessionStorage.

const TOKEN_KEY = 'ops-console-token';
const ORG_KEY = 'ops-console-organization';
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

/** Calls the operator API with the session's token; throws the platform's Error body as an ApiError. */
async function api(method, path, { query = {}, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, String(value));
  const headers = { authorization: `Bearer ${token()}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data?.code ?? `http_${response.status}`, data?.message ?? response.statusText);
  return data;
}

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
    input('organization_id', 'Organization', organizationId),
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
    h(
      'p',
      { class: 'muted', 'data-testid': 'jobs-total' },
      `${page.total.exact ? '' : '≈ '}${page.total.value} jobs created ${when(page.window.from)} – ${when(page.window.to)}`,
    ),
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
      (answer) => `${verb}: the job is now ${answer.job.state}`,
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
  const { items, alerts } = await api('GET', '/ops/queues', {
    query: { hours, dead_letters: params.get('dead_letters') ?? undefined, organization_id: organization() },
  });
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
    ]),
    h(
      'ul',
      { 'data-testid': 'queue-alerts' },
      alerts.map((alert) => h('li', { class: 'alert' }, h('strong', {}, alert.queue), `: ${alert.message}`, alert.job_id && [' ', jobLink(alert.job_id)])),
    ),
    alerts.length === 0 && h('p', { class: 'muted' }, 'No alerts.'),
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

// Routing

let renders = 0;

/** Shows the view the hash names (signed in), or the sign-in form. */
async function render() {
  clearTimeout(pollTimer);
  const ticket = ++renders;
  const signedIn = Boolean(token());
  $('sign-in').hidden = signedIn;
  document.querySelector('nav').hidden = !signedIn;
  if (!signedIn) return void $('view').replaceChildren();
  const [path, search = ''] = location.hash.slice(1).split('?');
  const [name, id] = path.split('/').filter(Boolean);
  const params = new URLSearchParams(search);
  const views = { jobs: () => (id ? jobView(id) : jobsView(params)), queues: queuesView, workers: workersView, schedules: schedulesView, pauses: pausesView };
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('current', link.hash === `#/${name ?? 'jobs'}`);
  try {
    const nodes = await (views[name] ?? views.jobs)(params);
    if (ticket === renders) $('view').replaceChildren(...nodes.filter(Boolean));
  } catch (error) {
    if (ticket !== renders) return;
    if (error.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    showError(error);
    if (error.status === 401) await render();
  }
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
  event.target.reset();
  navigate(location.hash || '#/jobs');
});
$('sign-out').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  clearMessages();
  render();
});
window.addEventListener('hashchange', () => {
  clearMessages();
  render();
});
render();
