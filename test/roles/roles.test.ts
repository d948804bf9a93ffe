import { expect } from 'chai';
import { builtInRolePermissions, organizationPermissions } from '../../src/members/permissions.ts';
import { addMember, createOrganization, organizationPairs } from '../support/organizations.ts';
import { newUser } from '../support/server.ts';
import { useServer } from '../support/suite.ts';

const ordered = (set: ReadonlySet<string>) => organizationPermissions.filter((p) => set.has(p));

describe('roles', () => {
  const ctx = useServer();

  const rolesPath = (org: string) => `/organizations/${org}/roles`;
  const builtIn = (counts: { owner: number; admin: number; member: number }) => [
    {
      key: 'owner',
      name: 'Owner',
      description: 'Everything, including deleting the organization and managing billing. An organization always keeps at least one owner.',
      built_in: true,
      permissions: [...organizationPermissions],
      member_count: counts.owner,
      created_at: null,
      updated_at: null,
    },
    {
      key: 'admin',
      name: 'Admin',
      description: 'Runs the organization: members, invitations, roles, settings and credits; cannot delete it or manage billing.',
      built_in: true,
      permissions: ordered(builtInRolePermissions.admin),
      member_count: counts.admin,
      created_at: null,
      updated_at: null,
    },
    {
      key: 'member',
      name: 'Member',
      description: 'Works in the organization: creates resources, sees members, activity and credits.',
      built_in: true,
      permissions: ordered(builtInRolePermissions.member),
      member_count: counts.member,
      created_at: null,
      updated_at: null,
    },
  ];

  describe('GET /organizations/{id}/roles', () => {
    it('lists built-in roles with the documented matrix, then custom roles by key, with member counts, paged', async () => {
      const owner = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.db('organization_roles').insert([
        { organization_id: org, key: 'reviewer', name: 'Reviewer', permissions: ['members.view', 'activity.view'] },
        { organization_id: org, key: 'editor', name: 'Editor', description: 'Makes things', permissions: ['resources.create'] },
      ]);
      await addMember(ctx.db, org, ada, 'editor');
      const rows = await ctx.db('organization_roles').where({ organization_id: org }).orderBy('key');
      const custom = rows.map((row) => ({
        key: row.key,
        name: row.name,
        description: row.description,
        built_in: false,
        permissions: row.permissions,
        member_count: row.key === 'editor' ? 1 : 0,
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
      }));
      const expected = [...builtIn({ owner: 1, admin: 0, member: 0 }), ...custom];

      const res = await ctx.server.request('get', rolesPath(org), { token: ada.token });
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ items: expected, next_cursor: null });

      const first = await ctx.server.request('get', rolesPath(org), { token: ada.token, query: { limit: 2 } });
      expect(first.body.items).to.deep.equal(expected.slice(0, 2));
      const second = await ctx.server.request('get', rolesPath(org), { token: ada.token, query: { limit: 2, cursor: first.body.next_cursor } });
      expect(second.body.items).to.deep.equal(expected.slice(2, 4));
      const third = await ctx.server.request('get', rolesPath(org), { token: ada.token, query: { limit: 2, cursor: second.body.next_cursor } });
      expect(third.body).to.deep.equal({ items: expected.slice(4), next_cursor: null });
    });

    it('answers 404 to non-members and 400 for a bad cursor', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const res = await ctx.server.request('get', rolesPath(org), { token: newUser().token });
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal({ code: 'not_found', message: 'organization not found', data: { issues: [] } });
      const bad = await ctx.server.request('get', rolesPath(org), { token: owner.token, query: { cursor: 'nope' } });
      expect(bad.status).to.equal(400);
    });
  });

  describe('PATCH /organizations/{id}/roles', () => {
    it('creates a custom role (duplicates dropped, matrix order), then updates it, recording both', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const created = await ctx.server.request('patch', rolesPath(org), {
        token: owner.token,
        body: { key: 'editor', name: 'Editor', description: 'Makes things', permissions: ['resources.create', 'members.view', 'resources.create'] },
      });
      expect(created.status).to.equal(200);
      let row = await ctx.db('organization_roles').where({ organization_id: org, key: 'editor' }).first();
      expect(row.permissions).to.deep.equal(['members.view', 'resources.create']);
      expect(created.body).to.deep.equal({
        role: {
          key: 'editor',
          name: 'Editor',
          description: 'Makes things',
          built_in: false,
          permissions: ['members.view', 'resources.create'],
          member_count: 0,
          created_at: row.created_at.toISOString(),
          updated_at: row.updated_at.toISOString(),
        },
      });

      const updated = await ctx.server.request('patch', rolesPath(org), {
        token: owner.token,
        body: { key: 'editor', name: 'Senior editor', permissions: ['activity.view'] },
      });
      expect(updated.status).to.equal(200);
      row = await ctx.db('organization_roles').where({ organization_id: org, key: 'editor' }).first();
      expect(updated.body.role).to.deep.equal({
        key: 'editor',
        name: 'Senior editor',
        description: 'Makes things',
        built_in: false,
        permissions: ['activity.view'],
        member_count: 0,
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
      });
      const cleared = await ctx.server.request('patch', rolesPath(org), {
        token: owner.token,
        body: { key: 'editor', name: 'Senior editor', description: null, permissions: [] },
      });
      expect(cleared.body.role).to.include({ description: null });
      expect(cleared.body.role.permissions).to.deep.equal([]);

      const events = await ctx
        .db('activity_events')
        .where({ organization_id: org, subject_type: 'role' })
        .orderBy('created_at')
        .select('action', 'actor_id', 'subject_id', 'data');
      expect(events.map((e) => e.action)).to.deep.equal(['role.created', 'role.updated', 'role.updated']);
      expect(events[0]).to.deep.equal({
        action: 'role.created',
        actor_id: owner.id,
        subject_id: 'editor',
        data: { after: { name: 'Editor', description: 'Makes things', permissions: ['members.view', 'resources.create'] } },
      });
      expect(events[1]!.data).to.deep.equal({
        before: { name: 'Editor', description: 'Makes things', permissions: ['members.view', 'resources.create'] },
        after: { name: 'Senior editor', description: 'Makes things', permissions: ['activity.view'] },
      });
    });

    it('gives a member holding a custom role exactly its permissions', async () => {
      const owner = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.server.request('patch', rolesPath(org), { token: owner.token, body: { key: 'auditor', name: 'Auditor', permissions: ['activity.view'] } });
      await addMember(ctx.db, org, ada, 'auditor');
      expect((await ctx.server.request('get', `/organizations/${org}/activity`, { token: ada.token })).status).to.equal(200);
      expect((await ctx.server.request('get', `/organizations/${org}/members`, { token: ada.token })).status).to.equal(403);
    });

    it('refuses built-in keys (409), unknown permissions and bad keys (400), writing nothing', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      const builtInKey = await ctx.server.request('patch', rolesPath(org), { token: owner.token, body: { key: 'admin', name: 'Admin', permissions: [] } });
      expect(builtInKey.status).to.equal(409);
      const message = 'key: "admin" is a built-in role and cannot be changed';
      expect(builtInKey.body).to.deep.equal({ code: 'conflict', message, data: { issues: [{ path: ['key'], message }] } });

      const unknown = await ctx.server.request('patch', rolesPath(org), {
        token: owner.token,
        body: { key: 'x', name: 'X', permissions: ['members.view', 'launch.missiles'] },
      });
      expect(unknown.status).to.equal(400);
      expect(unknown.body.data.issues[0].path).to.deep.equal(['permissions', 1]);
      expect(unknown.body.message).to.match(/^permissions\.1: unknown permission; known permissions: organization\.update, /);

      for (const body of [
        { key: 'Bad Key', name: 'X', permissions: [] },
        { key: 'x', name: '', permissions: [] },
        { key: 'x', name: 'X' },
        { key: 'x', name: 'X', permissions: [], extra: 1 },
      ]) {
        const res = await ctx.server.request('patch', rolesPath(org), { token: owner.token, body });
        expect(res.status, JSON.stringify(body)).to.equal(400);
      }
      expect(await ctx.db('organization_roles').where({ organization_id: org })).to.deep.equal([]);
      expect(await ctx.db('activity_events').where({ organization_id: org, subject_type: 'role' })).to.deep.equal([]);
    });

    it('needs roles.manage (403), lets nobody put in permissions they lack (403), and is 404 to outsiders', async () => {
      const owner = newUser();
      const admin = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await addMember(ctx.db, org, admin, 'admin');
      await addMember(ctx.db, org, ada, 'member');
      const plain = await ctx.server.request('patch', rolesPath(org), { token: ada.token, body: { key: 'x', name: 'X', permissions: [] } });
      expect(plain.status).to.equal(403);
      expect(plain.body.message).to.equal('your role "member" lacks the permission roles.manage');
      const escalate = await ctx.server.request('patch', rolesPath(org), {
        token: admin.token,
        body: { key: 'treasurer', name: 'Treasurer', permissions: ['billing.manage'] },
      });
      expect(escalate.status).to.equal(403);
      expect(escalate.body.message).to.equal('permissions: you cannot put billing.manage into a role; your role "admin" lacks it');
      // An owner-made role an admin could not have made is out of the admin's reach too.
      await ctx.server.request('patch', rolesPath(org), { token: owner.token, body: { key: 'treasurer', name: 'Treasurer', permissions: ['billing.manage'] } });
      const edit = await ctx.server.request('patch', rolesPath(org), { token: admin.token, body: { key: 'treasurer', name: 'Treasurer', permissions: [] } });
      expect(edit.status).to.equal(403);
      const outside = await ctx.server.request('patch', rolesPath(org), { token: newUser().token, body: { key: 'x', name: 'X', permissions: [] } });
      expect(outside.status).to.equal(404);
      const allowed = await ctx.server.request('patch', rolesPath(org), {
        token: admin.token,
        body: { key: 'helper', name: 'Helper', permissions: ['members.view'] },
      });
      expect(allowed.status).to.equal(200);
      expect(await ctx.db('organization_roles').where({ organization_id: org }).orderBy('key').pluck('key')).to.deep.equal(['helper', 'treasurer']);
    });

    it('caps custom roles at 50 per organization (409)', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.db('organization_roles').insert(Array.from({ length: 50 }, (_, i) => ({ organization_id: org, key: `r${i}`, name: `R${i}`, permissions: [] })));
      const res = await ctx.server.request('patch', rolesPath(org), { token: owner.token, body: { key: 'one-more', name: 'One more', permissions: [] } });
      expect(res.status).to.equal(409);
      expect(res.body.message).to.equal('key: the organization already has the maximum of 50 custom roles');
      const update = await ctx.server.request('patch', rolesPath(org), { token: owner.token, body: { key: 'r1', name: 'Renamed', permissions: [] } });
      expect(update.status).to.equal(200);
    });
  });

  describe('DELETE /organizations/{id}/roles', () => {
    it('never leaves a member holding a deleted role when deletion and assignment race', async () => {
      const rounds = await organizationPairs(ctx.server, ctx.db, 'member');
      await ctx.db('organization_roles').insert(rounds.map(({ org }) => ({ organization_id: org, key: 'editor', name: 'Editor', permissions: [] })));
      const results = await Promise.all(
        rounds.map(({ org, owner, other: ada }) =>
          Promise.all([
            ctx.server.request('delete', rolesPath(org), { token: owner.token, query: { key: 'editor' } }),
            ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'editor' } }),
          ]),
        ),
      );
      for (const [i, [deleted, assigned]] of results.entries()) {
        const { org, other: ada } = rounds[i]!;
        const role = (await ctx.db('organization_members').where({ organization_id: org, user_id: ada.id }).first('role')).role;
        const roleRows = await ctx.db('organization_roles').where({ organization_id: org }).pluck('key');
        // Either the deletion won (assignment then finds no such role) or the assignment did (deletion sees a holder).
        if (deleted.status === 204) {
          expect(assigned.status).to.equal(400);
          expect([role, roleRows]).to.deep.equal(['member', []]);
        } else {
          expect([deleted.status, assigned.status]).to.deep.equal([409, 200]);
          expect([role, roleRows]).to.deep.equal(['editor', ['editor']]);
        }
      }
    });

    it('deletes an unused custom role, drops it from the alert policy, and records role.deleted', async () => {
      const owner = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.server.request('patch', rolesPath(org), { token: owner.token, body: { key: 'finance', name: 'Finance', permissions: ['credits.view'] } });
      const policy = await ctx.server.request('patch', `/organizations/${org}/alert-policy`, {
        token: owner.token,
        body: { notify_roles: ['owner', 'finance'] },
      });
      expect(policy.status).to.equal(200);
      const res = await ctx.server.request('delete', rolesPath(org), { token: owner.token, query: { key: 'finance' } });
      expect(res.status).to.equal(204);
      expect(await ctx.db('organization_roles').where({ organization_id: org })).to.deep.equal([]);
      expect((await ctx.db('organization_alert_policies').where({ organization_id: org }).first()).notify_roles).to.deep.equal(['owner']);
      const event = await ctx
        .db('activity_events')
        .where({ organization_id: org, action: 'role.deleted' })
        .first('actor_id', 'subject_type', 'subject_id', 'data');
      expect(event).to.deep.equal({
        actor_id: owner.id,
        subject_type: 'role',
        subject_id: 'finance',
        data: { name: 'Finance', permissions: ['credits.view'] },
      });
    });

    it('refuses built-in roles and roles still held (409), unknown keys (404), missing key (400), members without roles.manage (403)', async () => {
      const owner = newUser();
      const ada = newUser();
      const org = await createOrganization(ctx.server, owner);
      await ctx.server.request('patch', rolesPath(org), { token: owner.token, body: { key: 'editor', name: 'Editor', permissions: [] } });
      await addMember(ctx.db, org, ada, 'editor');

      const builtInRole = await ctx.server.request('delete', rolesPath(org), { token: owner.token, query: { key: 'member' } });
      expect(builtInRole.status).to.equal(409);
      expect(builtInRole.body.message).to.equal('key: "member" is a built-in role and cannot be deleted');
      const held = await ctx.server.request('delete', rolesPath(org), { token: owner.token, query: { key: 'editor' } });
      expect(held.status).to.equal(409);
      const message = 'key: role "editor" is still held by 1 member; give them another role first';
      expect(held.body).to.deep.equal({ code: 'conflict', message, data: { issues: [{ path: ['key'], message }] } });
      const unknown = await ctx.server.request('delete', rolesPath(org), { token: owner.token, query: { key: 'ghost' } });
      expect(unknown.status).to.equal(404);
      expect(unknown.body).to.deep.equal({ code: 'not_found', message: 'role not found', data: { issues: [] } });
      const missing = await ctx.server.request('delete', rolesPath(org), { token: owner.token });
      expect(missing.status).to.equal(400);
      expect(missing.body.data.issues[0].path).to.deep.equal(['key']);
      const forbidden = await ctx.server.request('delete', rolesPath(org), { token: ada.token, query: { key: 'editor' } });
      expect(forbidden.status).to.equal(403);
      const outside = await ctx.server.request('delete', rolesPath(org), { token: newUser().token, query: { key: 'editor' } });
      expect(outside.status).to.equal(404);
      expect(outside.body.message).to.equal('organization not found');

      expect(await ctx.db('organization_roles').where({ organization_id: org }).pluck('key')).to.deep.equal(['editor']);
      expect(await ctx.db('activity_events').where({ organization_id: org, action: 'role.deleted' })).to.deep.equal([]);

      await ctx.server.request('patch', `/organizations/${org}/members/${ada.id}`, { token: owner.token, body: { role: 'member' } });
      expect((await ctx.server.request('delete', rolesPath(org), { token: owner.token, query: { key: 'editor' } })).status).to.equal(204);
    });
  });
});
