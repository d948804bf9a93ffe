/**
 * Request bodies published as input types. A field with a default is optional to the caller (the
 * server fills it in), but a generator reading a shared component cannot tell input from output:
 * openapi-typescript (its default `defaultNonNullable`) makes every field with a `default` required
 * in a component, and exempts only schemas written inside a request body. So a body schema that
 * holds a defaulted field anywhere is written into the request body itself (its defaulted
 * components with it); components without defaults stay shared references.
 */

type Json = Record<string, unknown>;
type Document = { paths?: object; components?: { schemas?: object } };

const REF = '#/components/schemas/';
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether the schema, or a component it reaches, has a property with a default. */
function holdsDefault(schema: unknown, components: Record<string, Json>, seen: Set<string>): boolean {
  if (Array.isArray(schema)) return schema.some((item) => holdsDefault(item, components, seen));
  if (!isObject(schema)) return false;
  const ref = schema.$ref;
  if (typeof ref === 'string' && ref.startsWith(REF)) {
    const name = ref.slice(REF.length);
    if (seen.has(name)) return false;
    seen.add(name);
    return holdsDefault(components[name], components, seen);
  }
  if (isObject(schema.properties) && Object.values(schema.properties).some((property) => isObject(property) && 'default' in property)) return true;
  return Object.values(schema).some((value) => holdsDefault(value, components, seen));
}

/** The schema with every reference to a defaulted component replaced by a copy of it (a component on the current path stays a reference). */
function inlineDefaulted(schema: unknown, components: Record<string, Json>, defaulted: Set<string>, path: readonly string[]): unknown {
  if (Array.isArray(schema)) return schema.map((item) => inlineDefaulted(item, components, defaulted, path));
  if (!isObject(schema)) return schema;
  const ref = schema.$ref;
  if (typeof ref === 'string' && ref.startsWith(REF)) {
    const name = ref.slice(REF.length);
    if (!defaulted.has(name) || path.includes(name)) return schema;
    const { $ref: _ref, ...siblings } = schema;
    return { ...(inlineDefaulted(components[name], components, defaulted, [...path, name]) as Json), ...siblings };
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inlineDefaulted(value, components, defaulted, path)]));
}

/** Every component some other part of the document refers to. */
function referenced(document: Document): Set<string> {
  const names = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item);
      return;
    }
    if (!isObject(value)) return;
    if (typeof value.$ref === 'string' && value.$ref.startsWith(REF)) names.add(value.$ref.slice(REF.length));
    for (const item of Object.values(value)) walk(item);
  };
  walk(document.paths);
  // Components referred to by kept components, to a fixed point.
  for (let size = -1; size !== names.size; ) {
    size = names.size;
    for (const name of [...names]) walk((document.components?.schemas as Record<string, Json> | undefined)?.[name]);
  }
  return names;
}

export function publishRequestBodiesAsInput<D extends Document>(document: D): D {
  const components = (document.components?.schemas ?? {}) as Record<string, Json>;
  const defaulted = new Set(Object.keys(components).filter((name) => holdsDefault(components[name], components, new Set())));
  if (defaulted.size === 0) return document;
  for (const operations of Object.values(document.paths ?? {}) as Json[]) {
    for (const operation of Object.values(operations)) {
      const content = isObject(operation) && isObject(operation.requestBody) ? operation.requestBody.content : undefined;
      if (!isObject(content)) continue;
      for (const media of Object.values(content)) if (isObject(media)) media.schema = inlineDefaulted(media.schema, components, defaulted, []);
    }
  }
  // A component only request bodies used is now written into them: drop the unused copy.
  const kept = referenced(document);
  for (const name of defaulted) if (!kept.has(name)) delete components[name];
  return document;
}
