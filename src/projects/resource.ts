import { defineResourceType } from '../access/index.ts';
import { presentProject, type ProjectRow } from './presenter.ts';
import { projectIdParams, projectSchema } from './schema.ts';

declare module '../access/index.ts' {
  interface ResourceTypeNames {
    project: true;
  }
}

/** A project: passes its audience on to the items filed in it (their declarations' `project`). */
export const projectResource = defineResourceType<ProjectRow>({
  type: 'project',
  table: 'projects',
  noun: 'project',
  activity: 'project',
  titleColumn: 'title',
  emojiColumn: 'emoji',
  kind: 'project',
  api: { path: '/projects', idParams: projectIdParams, tag: 'Projects', schema: projectSchema, present: presentProject },
  library: {},
  inventory: {
    state: `CASE WHEN r.deleted_at IS NOT NULL THEN 'deleted' WHEN r.archived_at IS NOT NULL THEN 'archived' ELSE 'active' END`,
    project: null,
  },
});
