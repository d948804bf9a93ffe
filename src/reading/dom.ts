/**
 * The little of the DOM this folder uses, typed by hand: the project compiles without the DOM lib
 * (it is a server), and linkedom's and Readability's declarations refer to DOM types.
 */
export interface DomNode {
  readonly nodeType: number;
  readonly textContent: string | null;
  readonly childNodes: ArrayLike<DomNode>;
}

export interface DomElement extends DomNode {
  readonly localName: string;
  getAttribute(name: string): string | null;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
}

export interface DomDocument {
  readonly documentElement: DomElement | null;
  readonly body: DomElement | null;
  readonly title: string;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
}

const ELEMENT = 1;
const TEXT = 3;
const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'iframe', 'button', 'select']);
const BLOCKS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'details',
  'div',
  'dl',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'table',
  'ul',
]);
/** Rows of a list or table: a line each, no blank line between them. */
const LINES = new Set(['li', 'tr', 'dt', 'dd']);

/**
 * Readable text of an element: paragraphs, headings and list items on lines of their own (with
 * `textContent` they would run together), whitespace collapsed except inside `<pre>`. Walks with a
 * stack, not recursion, so a hostile nesting depth cannot overflow it.
 */
export function blockText(root: DomNode): string {
  const parts: string[] = [];
  // Breaks between blocks collapse like margins: the larger wins, so `</li><li>` gives one newline, not two.
  let pendingBreak = 0;
  const emit = (text: string) => {
    if (pendingBreak > 0 && parts.length > 0) parts.push('\n'.repeat(pendingBreak));
    pendingBreak = 0;
    parts.push(text);
  };
  const stack: (DomNode | { break: number } | { pre: boolean } | { text: string })[] = [root];
  let preDepth = 0;
  while (stack.length) {
    const item = stack.pop()!;
    if ('break' in item) {
      pendingBreak = Math.max(pendingBreak, item.break);
      continue;
    }
    if ('text' in item) {
      emit(item.text);
      continue;
    }
    if ('pre' in item) {
      preDepth += item.pre ? 1 : -1;
      continue;
    }
    if (item.nodeType === TEXT) {
      const text = item.textContent ?? '';
      // Inside <pre> the layout is the content: shield it from the collapsing below (Private Use Area stand-ins).
      if (preDepth > 0) emit(text.replace(/\n/g, '\ue000').replace(/ /g, '\ue001').replace(/\t/g, '\ue002'));
      else if (/\S/.test(text)) emit(text.replace(/\s+/g, ' '));
      else if (pendingBreak === 0 && text) parts.push(' ');
      continue;
    }
    if (item.nodeType !== ELEMENT && item !== root) continue;
    const tag = (item as DomElement).localName ?? '';
    if (SKIPPED.has(tag)) continue;
    if (tag === 'br') {
      emit('\n');
      continue;
    }
    const block = BLOCKS.has(tag) ? 2 : LINES.has(tag) ? 1 : 0;
    // Pushed in reverse: what is pushed last is handled first.
    if (block) stack.push({ break: block });
    if (tag === 'pre') stack.push({ pre: false });
    for (let i = item.childNodes.length - 1; i >= 0; i--) stack.push(item.childNodes[i]!);
    if (tag === 'pre') stack.push({ pre: true });
    if (tag === 'li') stack.push({ text: '- ' });
    if (block) stack.push({ break: block });
  }
  return parts
    .join('')
    .split('\n')
    .map((line) => line.replace(/[ \t]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/\ue000/g, '\n')
    .replace(/\ue001/g, ' ')
    .replace(/\ue002/g, '\t')
    .trim();
}
