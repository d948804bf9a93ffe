import { defineResourceType, qualified } from '../access/index.ts';
import { presentSkill, skillColumns, type SkillRow } from './presenter.ts';
import { skillEnvelope, skillIdParams, skillSchema } from './schema.ts';

declare module '../access/index.ts' {
  interface ResourceTypeNames {
    skill: true;
  }
}

/** A skill: filed in projects. Answered in its `{skill}` envelope (spec 2.5), bare in project lists. */
export const skillResource = defineResourceType<SkillRow>({
  type: 'skill',
  table: 'skills',
  noun: 'skill',
  activity: 'skill',
  titleColumn: 'name',
  api: { path: '/skills', idParams: skillIdParams, tag: 'Skills', schema: skillEnvelope, present: (row) => ({ skill: presentSkill(row) }) },
  project: {
    schema: skillSchema,
    columns: qualified(skillColumns),
    present: (row) => presentSkill(row as unknown as SkillRow),
    note: 'the bare skill object, without the `skill` envelope',
  },
  library: {},
  inventory: { project: 'project_id' },
});
