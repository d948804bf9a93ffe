// The declarations of ./authorize.ts as text: one line each for the authorization matrix, and the
// paragraph each operation's OpenAPI description ends with. Generated from the data, never written by hand.
import type { PermissionNeed } from '../access/actor.ts';
import type { Authorization, FieldWhen, RecordName, ResourceRef, RoleRef, Rule } from './authorize.ts';

const needList = (need: PermissionNeed | undefined) => (need === undefined ? [] : typeof need === 'string' ? [need] : [...need]);
const needText = (need: PermissionNeed | undefined) =>
  need === undefined
    ? ''
    : ` holding ${needList(need)
        .map((p) => `\`${p}\``)
        .join(' or ')}`;
const typeName = (type: ResourceRef) => (typeof type === 'string' ? type : `{${type.param}}`);
const recordNoun = (record: RecordName) => record.replace('_', ' ');
const args = (...parts: (string | undefined | false)[]) => parts.filter(Boolean).join(', ');

/** The declaration in one line, for the authorization matrix: `resource(asset, edit, asset_id)`, `anyOf(operator, holder(job…))`. */
export function compactAuthorization(authorization: Authorization): string {
  const own = compactRule(authorization);
  if (!authorization.fields) return own;
  const fields = Object.entries(authorization.fields).map(([name, rule]) => `${name}${whenText(rule.when)}: ${compactAuthorization(rule.need)}`);
  return `${own} fields{${fields.join('; ')}}`;
}

const roleRefText = (role: RoleRef) => ('body' in role ? `body.${role.body}` : role.record === 'role' ? 'role' : `${role.record}.role`);
const roleRefProse = (role: RoleRef) =>
  'body' in role ? `the role named by \`${role.body}\`` : role.record === 'role' ? 'the role' : `the ${recordNoun(role.record)}’s role`;

const whenText = (when: FieldWhen) => (when === 'sent' ? '' : when === 'raised' ? ' raised' : `=${when.setTo}`);

function compactRule(a: Rule): string {
  switch (a.kind) {
    case 'public':
    case 'signedIn':
    case 'operator':
      return a.kind;
    case 'member':
      return `member(${args(needList(a.need).join('|'), a.self && `self: ${a.self}`, a.in && `in: ${a.in}`)})`;
    case 'within':
      return `within(${args(a.from, needList(a.need).join('|'))})`;
    case 'listing':
      return `listing(${a.from})`;
    case 'console':
      return `console(${a.from})`;
    case 'resource':
      return `resource(${args(typeName(a.type), a.capability, a.in === 'body' ? `body.${a.param}` : a.param)})`;
    case 'self':
      return `self(${a.param})`;
    case 'authorityOver':
      return `authorityOver(${roleRefText(a.role)})`;
    case 'holdsPermissions':
      return `holdsPermissions(body.${a.field})`;
    case 'resourceRole':
      return `resourceRole(${args(typeName(a.type), a.role, a.param)})`;
    case 'recordMember':
      return `recordMember(${args(a.record, needList(a.need).join('|'))})`;
    case 'holder':
      return `holder(${a.record}.${a.field})`;
    case 'recordIs':
      return `recordIs(${a.record}.${a.field}=${a.value})`;
    case 'linked':
      return `linked(${a.record}, ${a.types.join('|')}, ${a.capability})`;
    case 'allOf':
    case 'anyOf':
      return `${a.kind}(${a.of.map(compactAuthorization).join(', ')})`;
    case 'named':
      return `${a.name}(${Object.values(a.params).join(', ')})`;
  }
}

/** One paragraph for the operation's OpenAPI description, generated from the declaration: who, then what others get. */
export function describeAuthorization(authorization: Authorization): string {
  const who = describeRule(authorization);
  const fields = Object.entries(authorization.fields ?? {}).map(([name, rule]) => `\`${name}\`${whenProse(rule.when)} needs ${describeRule(rule.need)}`);
  const records = [...new Set(recordsOf(authorization))];
  const answers = [
    ...new Set([
      ...answersOf(authorization),
      ...(authorization.kind === 'operator' ? ['403 for everyone else'] : []),
      ...(records.length
        ? [
            `decided on the ${records.map(recordNoun).join(' and ')}: 404 for a caller who cannot see it (the same answer as for a missing id), 403 for one who can see it but may not do this`,
          ]
        : []),
      ...(fields.length ? ['a field its rule does not allow is 403 naming the field'] : []),
    ]),
  ];
  return [
    `${who[0]!.toUpperCase()}${who.slice(1)}.`,
    fields.length ? `Fields: ${fields.join('; ')}.` : '',
    answers.length ? `${answers.join('; ').replace(/^./, (c) => c.toUpperCase())}.` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

const whenProse = (when: FieldWhen) => (when === 'sent' ? '' : when === 'raised' ? ' raised above its current value' : ` set to \`${when.setTo}\``);

/** What callers the declaration does not admit are answered, each sentence once. */
function answersOf(a: Rule): string[] {
  switch (a.kind) {
    case 'operator':
      return ['an operator holds a token whose operator claim (`OPERATOR_CLAIM`) names the operator role, or is a configured operator id'];
    case 'member':
      return ['404 for non-members, 403 lacking the permission'];
    case 'within':
      return ['403 outside the organization (also for an organization that does not exist)'];
    case 'console':
      return ['403 otherwise'];
    case 'resource':
      return [
        '404 when the caller cannot read the resource (the same answer as for a missing id), 403 when they can read it but their role does not allow this',
      ];
    case 'allOf':
    case 'anyOf':
      return a.of.flatMap(answersOf);
    case 'named':
      return answersOf(a.rule);
    default:
      return [];
  }
}

/** The records a declaration decides on (its record kinds). */
function recordsOf(a: Rule): RecordName[] {
  switch (a.kind) {
    case 'recordMember':
    case 'holder':
    case 'recordIs':
    case 'linked':
      return [a.record];
    case 'allOf':
    case 'anyOf':
      return a.of.flatMap(recordsOf);
    case 'named':
      return recordsOf(a.rule);
    case 'authorityOver':
      return 'record' in a.role ? [a.role.record] : [];
    default:
      return [];
  }
}

function describeRule(a: Rule): string {
  switch (a.kind) {
    case 'public':
      return `anyone, without a token (${a.note})`;
    case 'signedIn':
      return `any signed-in caller (${a.note})`;
    case 'operator':
      return `operators of the service (${a.note})`;
    case 'member':
      return `members of the organization${a.in === 'query' ? ' named by `organization_id` in the query' : ''}${needText(a.need)}${a.self ? ` (a member may always act on their own \`${a.self}\`)` : ''}`;
    case 'within':
      return `members of the organization named in the ${a.from}${needText(a.need)}`;
    case 'listing':
      return 'lists only what the caller can read; a caller outside the organization gets an empty page';
    case 'console':
      return `operators of the service see every organization; anyone else must name \`organization_id\` in the ${a.from === 'body.filter' ? 'body’s filter' : a.from} and hold \`jobs.manage\` there (owners and admins)`;
    case 'resource': {
      const noun = a.as ?? (typeof a.type === 'string' ? a.type.replace('_', ' ') : 'resource');
      return `the caller's role on the ${noun}${a.in === 'body' ? ` named by \`${a.param}\` in the body` : ''} allows \`${a.capability}\``;
    }
    case 'self':
      return `the caller themselves (the user named by \`${a.param}\`)`;
    case 'authorityOver':
      return `authority over ${roleRefProse(a.role)} (\`owner\` only for owners; any other role only for a caller whose own role carries every permission of it)`;
    case 'holdsPermissions':
      return `a caller whose own role carries every permission listed in \`${a.field}\``;
    case 'resourceRole':
      return `the role \`${a.role}\` on the ${typeof a.type === 'string' ? a.type.replace('_', ' ') : 'resource'} (organization owners and admins act as owners)`;
    case 'recordMember':
      return `members of the ${recordNoun(a.record)}’s organization${needText(a.need)}`;
    case 'holder':
      return `the user the ${recordNoun(a.record)} names in \`${a.field}\``;
    case 'recordIs':
      return `a ${recordNoun(a.record)} whose \`${a.field}\` is \`${a.value}\``;
    case 'linked':
      return `whoever may \`${a.capability}\` the ${a.types.map((t) => t.replace('_', ' ')).join(', ')} the ${recordNoun(a.record)} was made for`;
    case 'allOf':
      return `all of: ${a.of.map((part) => `(${describeRule(part)})`).join(' and ')}`;
    case 'anyOf':
      return `any of: ${a.of.map((part) => `(${describeRule(part)})`).join(' or ')}`;
    case 'named':
      return describeRule(a.rule);
  }
}
