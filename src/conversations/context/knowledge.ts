// A turn's knowledge: the knowledge skill of each project its conversation is filed in, read as the
// run's user (the skills domain checks access), so a skill they cannot read never reaches the model.
import type { Knex } from 'knex';
import { actorFor } from '../../access/index.ts';
import { isAppError } from '../../core/errors.ts';
import type { Deps } from '../../platform/deps.ts';
import { getSkill } from '../../skills/index.ts';

/** One project's knowledge skill and what became of it in the turn. */
export interface KnowledgeSource {
  project_id: string;
  skill_id: string;
  /** `injected`: sent as system context; `unreadable`: the run's user cannot read it (or it is gone); `deleted`: in the trash. */
  status: 'injected' | 'unreadable' | 'deleted';
}

export interface TurnKnowledge {
  /** The system context (null: none). */
  system: string | null;
  sources: KnowledgeSource[];
}

/** How one skill reads in the system context. */
export const knowledgeText = (project: { title: string }, skill: { name: string; body: string }) =>
  `Knowledge from the project "${project.title}" (skill "${skill.name}"):\n\n${skill.body}`;

/**
 * Live projects holding the conversation: the one it was created in first, then those it was filed
 * into, in filing order. Their knowledge skills are the turn's system context; the asset-search
 * tool searches their assets first.
 */
export async function conversationProjects(db: Knex, conversationId: string): Promise<{ id: string; title: string; knowledge_skill_id: string | null }[]> {
  return db('project_items as pi')
    .join('projects as p', 'p.id', 'pi.project_id')
    .where({ 'pi.item_type': 'chat_conversation', 'pi.item_id': conversationId })
    .whereNull('p.deleted_at')
    .orderByRaw(`(pi.via = 'origin') DESC, pi.created_at, p.id`)
    .select('p.id', 'p.title', 'p.knowledge_skill_id');
}

/** The knowledge skill of each project holding the conversation, each skill once, as the run's user may read them. */
export async function turnKnowledge(deps: Pick<Deps, 'db'>, run: { conversation_id: string; user_id: string }): Promise<TurnKnowledge> {
  const projects = (await conversationProjects(deps.db, run.conversation_id)).filter(
    (p): p is { id: string; title: string; knowledge_skill_id: string } => p.knowledge_skill_id !== null,
  );
  if (projects.length === 0) return { system: null, sources: [] };
  const reader = actorFor(deps.db, { userId: run.user_id });
  const seen = new Set<string>();
  const texts: string[] = [];
  const sources: KnowledgeSource[] = [];
  for (const project of projects) {
    if (seen.has(project.knowledge_skill_id)) continue;
    seen.add(project.knowledge_skill_id);
    const source = { project_id: project.id, skill_id: project.knowledge_skill_id };
    const skill = await getSkill(deps, reader, project.knowledge_skill_id).catch((error: unknown) => {
      if (isAppError(error, 'not_found')) return null;
      throw error;
    });
    if (!skill) sources.push({ ...source, status: 'unreadable' });
    else if (skill.deleted_at !== null) sources.push({ ...source, status: 'deleted' });
    else {
      texts.push(knowledgeText(project, skill));
      sources.push({ ...source, status: 'injected' });
    }
  }
  return { system: texts.length > 0 ? texts.join('\n\n') : null, sources };
}
