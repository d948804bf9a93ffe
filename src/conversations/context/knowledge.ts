// A turn's knowledge: the conversation's own skill, then the knowledge skill of each project it is
// filed in, read as the run's user (the skills domain checks access), so a skill they cannot read
// never reaches the model.
import type { Knex } from 'knex';
import { actorFor } from '../../access/index.ts';
import { isAppError } from '../../core/errors.ts';
import type { Deps } from '../../platform/deps.ts';
import { getSkill } from '../../skills/index.ts';

/** One knowledge skill (a project's, or with project_id null the conversation's own) and what became of it in the turn. */
export interface KnowledgeSource {
  project_id: string | null;
  skill_id: string;
  /** `injected`: sent as system context; `unreadable`: the run's user cannot read it (or it is gone); `deleted`: in the trash. */
  status: 'injected' | 'unreadable' | 'deleted';
}

export interface TurnKnowledge {
  /** The system context (null: none). */
  system: string | null;
  sources: KnowledgeSource[];
}

/** How one skill reads in the system context (`project` null: the conversation's own skill). */
export const knowledgeText = (project: { title: string } | null, skill: { name: string; body: string }) =>
  project === null
    ? `Instructions for this conversation (skill "${skill.name}"):\n\n${skill.body}`
    : `Knowledge from the project "${project.title}" (skill "${skill.name}"):\n\n${skill.body}`;

/**
 * Live projects holding the conversation: the one it was created in first, then those it was filed
 * into, in filing order. Their knowledge skills are the turn's system context; the asset-search
 * tool searches their assets first.
 */
export async function conversationProjects(
  db: Knex,
  conversationId: string,
): Promise<{ id: string; title: string; knowledge_skill_id: string | null; chat_tools: string[] | null }[]> {
  return db('project_items as pi')
    .join('projects as p', 'p.id', 'pi.project_id')
    .where({ 'pi.item_type': 'chat_conversation', 'pi.item_id': conversationId })
    .whereNull('p.deleted_at')
    .orderByRaw(`(pi.via = 'origin') DESC, pi.created_at, p.id`)
    .select('p.id', 'p.title', 'p.knowledge_skill_id', 'p.chat_tools');
}

/** The conversation's skill, then the knowledge skill of each project holding it, each skill once, as the run's user may read them. */
export async function turnKnowledge(deps: Pick<Deps, 'db'>, run: { conversation_id: string; user_id: string }): Promise<TurnKnowledge> {
  const [conversation, projects] = await Promise.all([
    deps.db('conversations').where({ id: run.conversation_id }).first('skill_id') as Promise<{ skill_id: string | null } | undefined>,
    conversationProjects(deps.db, run.conversation_id),
  ]);
  const skills = [
    ...(conversation?.skill_id ? [{ project: null, skillId: conversation.skill_id }] : []),
    ...projects.flatMap((project) => (project.knowledge_skill_id === null ? [] : [{ project, skillId: project.knowledge_skill_id }])),
  ];
  if (skills.length === 0) return { system: null, sources: [] };
  const reader = actorFor(deps.db, { userId: run.user_id });
  const seen = new Set<string>();
  const texts: string[] = [];
  const sources: KnowledgeSource[] = [];
  for (const { project, skillId } of skills) {
    if (seen.has(skillId)) continue;
    seen.add(skillId);
    const source = { project_id: project?.id ?? null, skill_id: skillId };
    const skill = await getSkill(deps, reader, skillId).catch((error: unknown) => {
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
