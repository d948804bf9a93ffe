import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ResourceTypeDeclaration as ResourceEntry } from '../../src/access/registry.ts';
import { resourceTypes as resourceEntries } from '../../src/app/resource-types.ts';
import type { ResourceType } from '../../src/access/types.ts';
import { addMember, createOrganization, createProject, newMember, newUser } from '../support/factories.ts';
import type { ApiResponse } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

/**
 * The one access-control matrix: every resource type in the registry (src/app/resource-types.ts),
 * user B in every position, against every operation. A type that gets registered is covered the
 * moment it has a driver below; without one this file fails.
 *
 * CONVENTIONS §3: a resource B cannot read is 404 with the same body as a missing id; 403 when B
 * can read it but lacks the capability. §4: editors edit; only owners and organization
 * owners/admins manage people, change general access, delete and restore. Project roles never
 * confer ownership.
 */

type Resource = Record<string, any>;
type Role = 'viewer' | 'editor' | 'owner';

/** How the matrix drives one resource type over HTTP: the only per-type knowledge in this file. */
interface Driver {
  /** Collection path; the resource lives at `${path}/{id}` and is restored at `${path}/{id}/restore`. */
  path: string;
  /** Minimal create body (CONVENTIONS §4) besides `organization_id` (and `project_id` when filed at creation). */
  create: () => Record<string, unknown>;
  /** A PATCH body changing one column to a new value; the matrix checks the column in the database. */
  edit: { body: Record<string, unknown>; column: string; value: unknown };
  /** The resource from a by-id response (skills come wrapped in `{skill}`). */
  unwrap: (body: any) => Resource;
  /**
   * How the type is filed into a project after creation: `POST /projects/{project_id}/<segment>` with
   * `{<idField>: id}`. Required exactly when the type's declaration has a `project` section.
   */
  fileInto?: { segment: string; idField: string };
  /** The list query selecting the items filed in one project (where the list has such a filter). */
  projectFilter?: (projectId: string) => Record<string, string>;
  /** More by-id reads that follow read access exactly (200 for readers; 404 like a missing id otherwise). */
  reads?: { method: 'get' | 'post'; suffix: string; body?: Record<string, unknown> }[];
  /** Type-specific checks of B's item in the collection list. */
  listItem?: (item: Resource, want: { shared: boolean; canEdit: boolean; canDelete: boolean }) => void;
}

const drivers: Partial<Record<ResourceType, Driver>> = {
  asset: {
    path: '/assets',
    create: () => ({ type: 'image', title: 'Secret asset' }),
    edit: { body: { title: 'Edited by B' }, column: 'title', value: 'Edited by B' },
    unwrap: (body) => body,
    fileInto: { segment: 'assets', idField: 'asset_id' },
    projectFilter: (projectId) => ({ project_id: projectId }),
    reads: [{ method: 'post', suffix: '/prompt', body: {} }],
  },
  canvas: {
    path: '/canvases',
    create: () => ({ title: 'Secret canvas' }),
    edit: { body: { title: 'Edited by B' }, column: 'title', value: 'Edited by B' },
    unwrap: (body) => body,
    fileInto: { segment: 'canvases', idField: 'canvas_id' },
    projectFilter: (projectId) => ({ project_id: projectId }),
    reads: [{ method: 'get', suffix: '/access' }],
  },
  scheduled_task: {
    path: '/scheduled-tasks',
    create: () => ({ title: 'Secret task', prompt: 'Summarise the week', schedule: { cron: '0 9 * * 1', timezone: 'Europe/Berlin' } }),
    edit: { body: { title: 'Edited by B' }, column: 'title', value: 'Edited by B' },
    unwrap: (body) => body.scheduled_task,
    reads: [
      { method: 'get', suffix: '/access' },
      { method: 'get', suffix: '/runs/email-recipients' },
    ],
  },
  chat_conversation: {
    path: '/conversations',
    create: () => ({ title: 'Secret conversation' }),
    edit: { body: { title: 'Edited by B' }, column: 'title', value: 'Edited by B' },
    unwrap: (body) => body,
    fileInto: { segment: 'conversations', idField: 'conversation_id' },
    projectFilter: (projectId) => ({ project_ids: projectId }),
    reads: [{ method: 'get', suffix: '/access' }],
    // Spec 2.3 list extras.
    listItem: (item, want) => {
      expect({ shared: item.shared, can_edit: item.can_edit, can_delete: item.can_delete }, 'list extras').to.deep.equal({
        shared: want.shared,
        can_edit: want.canEdit,
        can_delete: want.canDelete,
      });
    },
  },
  project: {
    path: '/projects',
    create: () => ({ title: `Secret project ${randomUUID().slice(0, 8)}` }),
    edit: { body: { title: 'Edited by B' }, column: 'title', value: 'Edited by B' },
    unwrap: (body) => body,
    reads: [{ method: 'get', suffix: '/assets' }],
  },
  skill: {
    path: '/skills',
    create: () => ({ name: `Secret skill ${randomUUID().slice(0, 8)}`, description: '', body: 'x' }),
    edit: { body: { description: 'Edited by B' }, column: 'description', value: 'Edited by B' },
    unwrap: (body) => body.skill,
    fileInto: { segment: 'skills', idField: 'skill_id' },
    reads: [{ method: 'get', suffix: '/versions' }],
  },
};

/** What B gets for each operation, by position: the one table of expectations. */
interface Outcome {
  /** B's effective role (the access record's `role`); null when B cannot read the resource. */
  role: Role | null;
  read: number;
  listed: boolean;
  edit: number;
  managePeople: number;
  generalAccess: number;
  delete: number;
  restore: number;
}

const hidden: Outcome = { role: null, read: 404, listed: false, edit: 404, managePeople: 404, generalAccess: 404, delete: 404, restore: 404 };
const viewer: Outcome = { role: 'viewer', read: 200, listed: true, edit: 403, managePeople: 403, generalAccess: 403, delete: 403, restore: 403 };
const editor: Outcome = { role: 'editor', read: 200, listed: true, edit: 200, managePeople: 403, generalAccess: 403, delete: 403, restore: 403 };
const owner: Outcome = { role: 'owner', read: 200, listed: true, edit: 200, managePeople: 201, generalAccess: 200, delete: 204, restore: 200 };

type PositionName =
  | 'outside the organization'
  | 'member without grant'
  | 'granted viewer'
  | 'granted editor'
  | 'workspace viewer (general access)'
  | 'workspace editor (general access)'
  | 'project viewer (filed when created)'
  | 'project editor (filed afterwards)'
  | 'organization admin';

const expected: Record<PositionName, Outcome> = {
  'outside the organization': hidden,
  'member without grant': hidden,
  'granted viewer': viewer,
  'granted editor': editor,
  'workspace viewer (general access)': viewer,
  'workspace editor (general access)': editor,
  // Project roles reach the items filed in it, but never own them.
  'project viewer (filed when created)': viewer,
  'project editor (filed afterwards)': editor,
  // Organization owners/admins act as owners of every resource.
  'organization admin': owner,
};

/** `shared` of the access record (and the conversation list extra): general access is not private, or someone holds a grant. */
const sharedIn = (position: PositionName) => position.startsWith('granted') || position.startsWith('workspace');

describe('access matrix: every registered resource type, user B in every position', () => {
  const ctx = useServer({}, { pool: 4 });
  const entries = Object.values(resourceEntries).filter((entry): entry is ResourceEntry => entry !== undefined);

  it('covers every registered resource type with a driver that matches the registry', () => {
    expect(entries.map((entry) => entry.type)).to.include.members(['asset', 'canvas', 'chat_conversation', 'project', 'skill']);
    for (const entry of entries) {
      const driver = drivers[entry.type];
      expect(driver, `add a driver for ${entry.type} to test/access/access-matrix.test.ts`).to.not.equal(undefined);
      expect(Boolean(driver!.fileInto), `${entry.type}: the driver files it into projects exactly when the registry says it is filed in projects`).to.equal(
        Boolean(entry.project),
      );
    }
  });

  for (const entry of entries) {
    const type = entry.type;
    const driver = drivers[type];
    describe(type, () => {
      if (!driver) {
        it(`has a driver`, () => expect.fail(`add a driver for ${type} to test/access/access-matrix.test.ts`));
        return;
      }
      const positions = (Object.keys(expected) as PositionName[]).filter((position) => {
        // A project's own "through a project" is its general access (the workspace rows).
        if (position.startsWith('project ')) return Boolean(entry.project);
        return true;
      });
      for (const position of positions) {
        const want = expected[position];
        it(`B ${position}: read ${want.read}, listed ${want.listed}, edit ${want.edit}, manage people ${want.managePeople}, general access ${want.generalAccess}, delete ${want.delete}, restore ${want.restore}`, async () => {
          await runMatrixRow(entry, driver, position, want);
        });
      }
    });
  }

  async function runMatrixRow(entry: ResourceEntry, driver: Driver, position: PositionName, want: Outcome): Promise<void> {
    const { server, db } = ctx;
    const type = entry.type;
    const a = newUser();
    const b = newUser();
    const org = await createOrganization(server, a);
    const c = await newMember(db, org);
    if (position === 'outside the organization') await createOrganization(server, b);
    else await addMember(db, org, b, position === 'organization admin' ? 'admin' : 'member');

    // Arrange: A creates the resource privately; B reaches it as the position says.
    let projectId: string | undefined;
    if (position.startsWith('project ')) {
      projectId = (await createProject(server, a, org)).id as string;
      const grant = await server.request('post', `/access/project/${projectId}/grants`, {
        token: a.token,
        body: { user_id: b.id, role: position.startsWith('project viewer') ? 'viewer' : 'editor' },
      });
      expect(grant.status, JSON.stringify(grant.body)).to.equal(201);
    }
    const filedAtCreation = position === 'project viewer (filed when created)';
    const created = await server.request('post', driver.path, {
      token: a.token,
      body: { organization_id: org, ...driver.create(), ...(filedAtCreation && { project_id: projectId }) },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = driver.unwrap(created.body).id as string;
    if (position === 'project editor (filed afterwards)') {
      const { segment, idField } = driver.fileInto!;
      const filed = await server.request('post', `/projects/${projectId}/${segment}`, { token: a.token, body: { [idField]: id } });
      expect(filed.status, JSON.stringify(filed.body)).to.equal(201);
    }
    if (position === 'granted viewer' || position === 'granted editor') {
      const grant = await server.request('post', `/access/${type}/${id}/grants`, {
        token: a.token,
        body: { user_id: b.id, role: position === 'granted viewer' ? 'viewer' : 'editor' },
      });
      expect(grant.status, JSON.stringify(grant.body)).to.equal(201);
    }
    // The outsider gets a resource open to the whole workspace: general access never crosses organizations.
    if (position.startsWith('workspace ') || position === 'outside the organization') {
      const opened = await server.request('patch', `/access/${type}/${id}`, {
        token: a.token,
        body: { visibility: 'workspace', workspace_role: position.startsWith('workspace viewer') ? 'viewer' : 'editor' },
      });
      expect(opened.status, JSON.stringify(opened.body)).to.equal(200);
    }
    const row = () => db(entry.table).where({ id }).first();
    const before = await row();
    const flipped = before.visibility === 'private' ? 'workspace' : 'private';
    const byId = `${driver.path}/${id}`;
    const missingId = randomUUID();
    /** Every answer B got, with how to ask the same of a missing id (404s must be indistinguishable). */
    const answers: { what: string; res: ApiResponse; method: string; path: (target: string) => string; body?: unknown }[] = [];
    const ask = async (what: string, method: string, path: (target: string) => string, body?: unknown) => {
      const res = await server.request(method, path(id), { token: b.token, body });
      answers.push({ what, res, method, path, body });
      return res;
    };

    // Read: the resource, its access record and the type's other by-id reads.
    const read = await ask('read', 'get', (target) => `${driver.path}/${target}`);
    const access = await ask('access record', 'get', (target) => `/access/${type}/${target}`);
    const reads = [...(driver.reads ?? []), ...(entry.project ? [{ method: 'get' as const, suffix: '/projects' }] : [])];
    const otherReads: ApiResponse[] = [];
    for (const r of reads)
      otherReads.push(await ask(`${r.method.toUpperCase()} ${r.suffix}`, r.method, (target) => `${driver.path}/${target}${r.suffix}`, r.body));

    // List.
    const list = await server.request('get', driver.path, { token: b.token, query: { organization_id: org, limit: 100 } });
    expect(list.status, JSON.stringify(list.body)).to.equal(200);
    const item = list.body.items.find((i: Resource) => i.id === id);
    if (position === 'outside the organization')
      expect(list.body, 'outside the organization: an empty page (spec §4.1)').to.deep.equal({ items: [], next_cursor: null });
    const inProject =
      projectId &&
      driver.projectFilter &&
      (await server.request('get', driver.path, { token: b.token, query: { organization_id: org, ...driver.projectFilter(projectId) } }));

    // Edit, manage people, general access, delete (A deletes when B may not), restore.
    const edit = await ask('edit', 'patch', (target) => `${driver.path}/${target}`, driver.edit.body);
    const afterEdit = await row();
    const people = await ask('manage people', 'post', (target) => `/access/${type}/${target}/grants`, { user_id: c.id, role: 'viewer' });
    const general = await ask('general access', 'patch', (target) => `/access/${type}/${target}`, { visibility: flipped });
    const afterGeneral = await row();
    const del = await ask('delete', 'delete', (target) => `${driver.path}/${target}`);
    const afterDelete = await row();
    if (del.status !== 204) expect((await server.request('delete', byId, { token: a.token })).status, 'A deletes').to.equal(204);
    const deleted = await row();
    const restore = await ask('restore', 'post', (target) => `${driver.path}/${target}/restore`);
    const afterRestore = await row();
    if (restore.status !== 200) expect((await server.request('post', `${byId}/restore`, { token: a.token })).status, 'A restores').to.equal(200);

    // The statuses, all at once (a failure shows the whole row).
    expect(
      {
        role: access.status === 200 ? access.body.role : null,
        read: read.status,
        listed: Boolean(item),
        edit: edit.status,
        managePeople: people.status,
        generalAccess: general.status,
        delete: del.status,
        restore: restore.status,
      },
      `${type}, B ${position}`,
    ).to.deep.equal(want);
    for (const [i, res] of otherReads.entries())
      expect(res.status, `${reads[i]!.method.toUpperCase()} ${driver.path}/{id}${reads[i]!.suffix}: ${JSON.stringify(res.body)}`).to.equal(want.read);
    expect(access.status, 'GET /access/{type}/{id} answers like the read').to.equal(want.read);

    // 404: exactly what a missing id gets. 403: the Error body naming B's role.
    for (const answer of answers) {
      if (answer.res.status === 404) {
        const missing = await server.request(answer.method, answer.path(missingId), { token: b.token, body: answer.body });
        expect({ status: missing.status, body: answer.res.body }, `${answer.what}: 404 like a missing id`).to.deep.equal({ status: 404, body: missing.body });
        expect(answer.res.body.code).to.equal('not_found');
      }
      if (answer.res.status === 403) {
        expect(answer.res.body.code, `${answer.what}: ${JSON.stringify(answer.res.body)}`).to.equal('forbidden');
        expect(answer.res.body.message, `${answer.what}: names B's role`).to.include(`"${want.role}"`);
        expect(answer.res.body.data).to.deep.equal({ issues: [] });
      }
    }

    // What B saw when B could read it.
    const shared = sharedIn(position);
    if (want.read === 200) {
      expect(driver.unwrap(read.body)).to.include({ id, organization_id: org, deleted_at: null });
      const canEdit = want.role !== 'viewer';
      const owns = want.role === 'owner';
      expect(access.body).to.include({ resource_type: type, resource_id: id, owner_id: a.id, role: want.role, shared });
      expect(access.body.capabilities).to.deep.equal({ can_edit: canEdit, can_manage_people: owns, can_change_general_access: owns, can_delete: owns });
      driver.listItem?.(item, { shared, canEdit, canDelete: owns });
      if (projectId) {
        const projects = otherReads[reads.findIndex((r) => r.suffix === '/projects')]!;
        expect({ ids: projects.body.items.map((p: Resource) => p.id), next_cursor: projects.body.next_cursor }, 'the projects holding it').to.deep.equal({
          ids: [projectId],
          next_cursor: null,
        });
        const inherited = access.body.inherited.find((i: Resource) => i.kind === 'project' && i.id === projectId);
        expect(inherited, 'the access record names the project').to.include({ via: filedAtCreation ? 'origin' : 'reference', role: want.role, audience: true });
        if (inProject)
          expect(
            inProject.body.items.map((i: Resource) => i.id),
            'the list filtered by its project',
          ).to.deep.equal([id]);
      }
    }
    if (edit.status === 200) expect(driver.unwrap(edit.body)[driver.edit.column]).to.deep.equal(driver.edit.value);
    if (people.status === 201) expect(people.body).to.include({ user_id: c.id, role: 'viewer', granted_by_id: b.id });
    if (general.status === 200) expect(general.body.general_access.visibility).to.equal(flipped);
    if (restore.status === 200) expect(driver.unwrap(restore.body)).to.include({ id, deleted_at: null });

    // Side effects in the database: refused operations change nothing, allowed ones change exactly their part.
    expect(afterEdit[driver.edit.column], 'edited column').to.deep.equal(edit.status === 200 ? driver.edit.value : before[driver.edit.column]);
    const grantsToC = await db('resource_grants').where({ resource_type: type, resource_id: id, user_id: c.id }).count<{ count: string }[]>('* as count');
    expect(Number(grantsToC[0]!.count), 'grants to C').to.equal(people.status === 201 ? 1 : 0);
    expect(afterGeneral.visibility, 'visibility').to.equal(general.status === 200 ? flipped : before.visibility);
    if (del.status === 204)
      expect({ deleted: afterDelete.deleted_at instanceof Date, by: afterDelete.deleted_by_id }, 'deleted by B').to.deep.equal({ deleted: true, by: b.id });
    else
      expect({ deleted_at: afterDelete.deleted_at, deleted_by_id: afterDelete.deleted_by_id }, 'a refused delete leaves it live').to.deep.equal({
        deleted_at: null,
        deleted_by_id: null,
      });
    if (restore.status === 200)
      expect({ deleted_at: afterRestore.deleted_at, deleted_by_id: afterRestore.deleted_by_id }, 'restored').to.deep.equal({
        deleted_at: null,
        deleted_by_id: null,
      });
    else
      expect({ deleted_at: afterRestore.deleted_at, deleted_by_id: afterRestore.deleted_by_id }, 'a refused restore leaves it deleted').to.deep.equal({
        deleted_at: deleted.deleted_at,
        deleted_by_id: deleted.deleted_by_id,
      });

    // The activity feed records what B did, and only that.
    const actions = [
      ...(edit.status === 200 ? [`${entry.activity}.updated`] : []),
      ...(people.status === 201 ? ['access.grant_created'] : []),
      ...(general.status === 200 ? ['access.general_access_updated'] : []),
      ...(del.status === 204 ? [`${entry.activity}.deleted`] : []),
      ...(restore.status === 200 ? [`${entry.activity}.restored`] : []),
    ];
    expect(
      await db('activity_events').where({ subject_id: id, actor_id: b.id }).orderBy('created_at').orderBy('id').pluck('action'),
      'activity by B',
    ).to.have.members(actions);
  }
});
