import { expect } from 'chai';
import { actorFor, allows, capabilitiesOf, whereReadable, type Capability, type ResourceType, type Role } from '../../src/access/index.ts';
import type { TestUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';
import { addMember, fileInto, grant, insertCanvas, insertProject, knownUser, createOrganization } from './fixtures.ts';

/** The declared policy, restated as the expectation: every role × every capability. */
const expected: Record<Role, Record<Capability, boolean>> = {
  viewer: { read: true, edit: false, manage_people: false, change_general_access: false, delete: false, restore: false, archive: false },
  editor: { read: true, edit: true, manage_people: false, change_general_access: false, delete: false, restore: false, archive: false },
  owner: { read: true, edit: true, manage_people: true, change_general_access: true, delete: true, restore: true, archive: true },
};
const types: ResourceType[] = ['asset', 'chat_conversation', 'canvas', 'project', 'scheduled_task', 'skill'];

describe('access policy', () => {
  describe('role × capability matrix', () => {
    for (const type of types) {
      for (const role of ['viewer', 'editor', 'owner'] as const) {
        it(`${type}: ${role}`, () => {
          for (const [capability, allowed] of Object.entries(expected[role]))
            expect(allows(type, role, capability as Capability), `${type} ${role} ${capability}`).to.equal(allowed);
          expect(capabilitiesOf(type, role)).to.deep.equal({
            can_edit: expected[role].edit,
            can_manage_people: expected[role].manage_people,
            can_change_general_access: expected[role].change_general_access,
            can_delete: expected[role].delete,
          });
        });
      }
      it(`${type}: no role holds nothing`, () => {
        for (const capability of Object.keys(expected.owner)) expect(allows(type, null, capability as Capability)).to.equal(false);
      });
    }
  });

  describe('effective role in SQL (direct vs inherited), and each capability through requireAccess', () => {
    const ctx = useServer();
    let owner: TestUser;
    let org: string;
    before(async () => {
      owner = await knownUser(ctx.db);
      org = await createOrganization(ctx.server, owner);
    });

    interface Scenario {
      name: string;
      source: 'none' | 'direct' | 'inherited';
      /** Arranges B's access to a fresh resource; returns its type and id. */
      arrange(b: TestUser): Promise<{ type: ResourceType; id: string }>;
      role: Role | null;
      member?: 'member' | 'admin' | 'owner' | false;
    }

    const asset = async (fields: Record<string, unknown>) => {
      const [row] = await ctx
        .db('assets')
        .insert({ organization_id: org, created_by_id: owner.id, type: 'text', ...fields })
        .returning('id');
      return { type: 'asset' as const, id: row.id as string };
    };
    const canvas = async (fields: Record<string, unknown> = {}) => ({ type: 'canvas' as const, id: await insertCanvas(ctx.db, org, owner, fields) });

    const scenarios: Scenario[] = [
      {
        name: 'outside the organization',
        source: 'none',
        member: false,
        arrange: async () => canvas({ visibility: 'workspace', workspace_role: 'editor' }),
        role: null,
      },
      { name: 'member, private, no grant', source: 'none', arrange: async () => canvas(), role: null },
      { name: 'creator', source: 'direct', arrange: async (b) => ({ type: 'canvas', id: await insertCanvas(ctx.db, org, b) }), role: 'owner' },
      { name: 'organization admin', source: 'direct', member: 'admin', arrange: async () => canvas(), role: 'owner' },
      { name: 'organization owner', source: 'direct', member: 'owner', arrange: async () => canvas(), role: 'owner' },
      {
        name: 'general access workspace viewer',
        source: 'direct',
        arrange: async () => canvas({ visibility: 'workspace', workspace_role: 'viewer' }),
        role: 'viewer',
      },
      {
        name: 'general access workspace editor',
        source: 'direct',
        arrange: async () => canvas({ visibility: 'workspace', workspace_role: 'editor' }),
        role: 'editor',
      },
      {
        name: 'public acts as workspace for members',
        source: 'direct',
        arrange: async () => canvas({ visibility: 'public', workspace_role: 'viewer' }),
        role: 'viewer',
      },
      {
        name: 'workspace_role owner is capped at editor',
        source: 'direct',
        arrange: async () => canvas({ visibility: 'workspace', workspace_role: 'owner' }),
        role: 'editor',
      },
      {
        name: 'grant viewer',
        source: 'direct',
        arrange: async (b) => {
          const c = await canvas();
          await grant(ctx.db, org, 'canvas', c.id, b, 'viewer', owner);
          return c;
        },
        role: 'viewer',
      },
      {
        name: 'grant editor',
        source: 'direct',
        arrange: async (b) => {
          const c = await canvas();
          await grant(ctx.db, org, 'canvas', c.id, b, 'editor', owner);
          return c;
        },
        role: 'editor',
      },
      {
        name: 'highest wins: workspace viewer + grant editor',
        source: 'direct',
        arrange: async (b) => {
          const c = await canvas({ visibility: 'workspace' });
          await grant(ctx.db, org, 'canvas', c.id, b, 'editor', owner);
          return c;
        },
        role: 'editor',
      },
      {
        name: 'project grant viewer',
        source: 'inherited',
        arrange: async (b) => {
          const c = await canvas();
          const p = await insertProject(ctx.db, org, owner);
          await fileInto(ctx.db, p, 'canvas', c.id);
          await grant(ctx.db, org, 'project', p, b, 'viewer', owner);
          return c;
        },
        role: 'viewer',
      },
      {
        name: 'project grant editor',
        source: 'inherited',
        arrange: async (b) => {
          const c = await canvas();
          const p = await insertProject(ctx.db, org, owner);
          await fileInto(ctx.db, p, 'canvas', c.id);
          await grant(ctx.db, org, 'project', p, b, 'editor', owner);
          return c;
        },
        role: 'editor',
      },
      {
        name: 'project owner gets editor, not owner, on items',
        source: 'inherited',
        arrange: async (b) => {
          const c = await canvas();
          const p = await insertProject(ctx.db, org, b);
          await fileInto(ctx.db, p, 'canvas', c.id);
          return c;
        },
        role: 'editor',
      },
      {
        name: 'project general access workspace editor',
        source: 'inherited',
        arrange: async () => {
          const c = await canvas();
          const p = await insertProject(ctx.db, org, owner, { visibility: 'workspace', workspace_role: 'editor' });
          await fileInto(ctx.db, p, 'canvas', c.id);
          return c;
        },
        role: 'editor',
      },
      {
        name: 'deleted project passes nothing',
        source: 'none',
        arrange: async (b) => {
          const c = await canvas();
          const p = await insertProject(ctx.db, org, owner, { deleted_at: new Date(), deleted_by_id: owner.id });
          await fileInto(ctx.db, p, 'canvas', c.id);
          await grant(ctx.db, org, 'project', p, b, 'editor', owner);
          return c;
        },
        role: null,
      },
      {
        name: 'project grant on a project (direct)',
        source: 'direct',
        arrange: async (b) => {
          const p = await insertProject(ctx.db, org, owner);
          await grant(ctx.db, org, 'project', p, b, 'editor', owner);
          return { type: 'project', id: p };
        },
        role: 'editor',
      },
      {
        name: 'asset: origin canvas editor',
        source: 'inherited',
        arrange: async (b) => {
          const c = await canvas();
          await grant(ctx.db, org, 'canvas', c.id, b, 'editor', owner);
          return asset({ origin_canvas_id: c.id });
        },
        role: 'editor',
      },
      {
        name: 'asset: origin canvas owner is capped at editor',
        source: 'inherited',
        arrange: async (b) => asset({ origin_canvas_id: await insertCanvas(ctx.db, org, b) }),
        role: 'editor',
      },
      {
        name: 'asset: referencing canvas editor passes viewer',
        source: 'inherited',
        arrange: async (b) => {
          const c = await canvas();
          await grant(ctx.db, org, 'canvas', c.id, b, 'editor', owner);
          const a = await asset({});
          await ctx.db('resource_references').insert({ from_type: 'canvas', from_id: c.id, asset_id: a.id });
          return a;
        },
        role: 'viewer',
      },
      {
        name: 'asset: project reaches it through its origin canvas',
        source: 'inherited',
        arrange: async (b) => {
          const c = await canvas();
          const p = await insertProject(ctx.db, org, owner);
          await fileInto(ctx.db, p, 'canvas', c.id);
          await grant(ctx.db, org, 'project', p, b, 'viewer', owner);
          return asset({ origin_canvas_id: c.id });
        },
        role: 'viewer',
      },
      {
        name: 'asset: deleted origin canvas passes nothing',
        source: 'none',
        arrange: async (b) => {
          const c = await canvas({ deleted_at: new Date(), deleted_by_id: owner.id });
          await grant(ctx.db, org, 'canvas', c.id, b, 'editor', owner);
          return asset({ origin_canvas_id: c.id });
        },
        role: null,
      },
    ];

    for (const scenario of scenarios) {
      it(`${scenario.source}: ${scenario.name} → ${scenario.role ?? 'no access'}`, async () => {
        const b = await knownUser(ctx.db);
        if (scenario.member !== false) await addMember(ctx.db, org, b, scenario.member ?? 'member');
        const { type, id } = await scenario.arrange(b);
        // The list predicate and the single-row check agree.
        const viewer = await actorFor(ctx.db, { userId: b.id }).viewer(org);
        const listed = viewer
          ? await whereReadable(
              ctx.db(`${type === 'asset' ? 'assets' : type === 'canvas' ? 'canvases' : 'projects'} as r`).where('r.id', id),
              type,
              'r',
              viewer,
            ).pluck('r.id')
          : [];
        expect(listed.length, 'readable in lists').to.equal(scenario.role ? 1 : 0);
        for (const capability of Object.keys(expected.owner) as Capability[]) {
          const outcome = await actorFor(ctx.db, { userId: b.id })
            .resource(ctx.db, type, id, capability)
            .then(
              (access: { role: Role }) => access.role,
              (error: { status: number }) => error.status,
            );
          const want = scenario.role === null ? 404 : expected[scenario.role][capability] ? scenario.role : 403;
          expect(outcome, capability).to.equal(want);
        }
      });
    }
  });
});
