import type { EmailMessage } from './types.ts';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe to put into HTML: names and titles users chose may contain markup. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]!);

/** The HTML part of a plain-text message: paragraphs and line breaks kept, everything else escaped. */
export function htmlFromText(text: string): string {
  const paragraphs = text.split(/\n{2,}/).map((paragraph) => `<p>${paragraph.split('\n').map(escapeHtml).join('<br>\n')}</p>`);
  return `<!doctype html>\n<html><body>\n${paragraphs.join('\n')}\n</body></html>\n`;
}

/** A subject is one header line: control characters (CR/LF above all) become spaces. */
export const subjectLine = (subject: string): string => subject.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();

/**
 * What every provider sends and records: the subject as one line, and an HTML part derived from
 * the text (escaped) unless the message brings its own.
 */
export function prepareMessage(message: EmailMessage): EmailMessage & { html: string } {
  return { ...message, subject: subjectLine(message.subject), html: message.html ?? htmlFromText(message.text) };
}
