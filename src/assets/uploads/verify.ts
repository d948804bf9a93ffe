import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { fileTypeFromStream, supportedMimeTypes } from 'file-type';

/** Why finished bytes are refused: the reason the asset's `import_error` and the PATCH's 422 carry. */
export interface Refusal {
  code: 'size_mismatch' | 'checksum_mismatch' | 'type_mismatch' | 'invalid_text';
  message: string;
}

export interface Verified {
  size: number;
  sha256: string;
}

// Types with no signature whose bytes must be text (checked to decode in their charset).
const textual = (type: string) =>
  type.startsWith('text/') || /\+(json|xml)$/.test(type) || ['application/json', 'application/xml', 'model/obj', 'application/x-subrip'].includes(type);

// Names one type goes by: a declared alias of what the bytes are is no mismatch.
const aliases: readonly (readonly string[])[] = [
  ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave'],
  ['audio/mp4', 'audio/x-m4a', 'audio/m4a'],
  ['audio/mpeg', 'audio/mp3'],
  ['image/jpeg', 'image/jpg'],
  ['application/msword', 'application/x-cfb'],
  ['application/xml', 'text/xml'],
];
const sameType = (a: string, b: string) => a === b || aliases.some((group) => group.includes(a) && group.includes(b));

/** `text/plain; charset=utf-16le` → `{type: 'text/plain', charset: 'utf-16le'}`; the charset defaults to UTF-8. */
export function parseMediaType(value: string): { type: string; charset: string } {
  const [type = '', ...parameters] = value.split(';').map((part) => part.trim());
  const charset = parameters.map((p) => /^charset=("?)([\w.:-]+)\1$/i.exec(p)?.[2]).find(Boolean) ?? 'utf-8';
  return { type: type.toLowerCase(), charset: charset.toLowerCase() };
}

/** Whether the TextDecoder knows the charset (creation refuses one it does not). */
export function knownCharset(charset: string): boolean {
  try {
    new TextDecoder(charset);
    return true;
  } catch {
    return false;
  }
}

/**
 * What the bytes are so far, fed chunk by chunk in their order: their size, SHA-256 and — for a
 * declared text type — that they decode in their charset and hold no NUL (binary is not text).
 * Fed as the bytes arrive (./received.ts), so a finished upload is not read again to be measured.
 */
export class Measurement {
  size = 0;
  private readonly hash = createHash('sha256');
  private readonly decoder: TextDecoder | null;
  private readonly charset: string;
  private text: Refusal | null = null;

  constructor(mimeType: string) {
    const { type, charset } = parseMediaType(mimeType);
    this.charset = charset;
    this.decoder = textual(type) ? new TextDecoder(charset, { fatal: true }) : null;
  }

  update(chunk: Buffer): void {
    this.size += chunk.length;
    this.hash.update(chunk);
    if (this.decoder && !this.text) this.text = checkText(this.decoder, chunk, this.charset, false);
  }

  /** The finished bytes against what was declared (ends the measurement: call it once). */
  verdict(declared: { size: number; checksum: string | null }): Verified | Refusal {
    if (this.decoder && !this.text) this.text = checkText(this.decoder, Buffer.alloc(0), this.charset, true);
    const sha256 = this.hash.digest('hex');
    if (this.size !== declared.size) return { code: 'size_mismatch', message: `size: ${this.size} bytes arrived, ${declared.size} were declared` };
    if (declared.checksum && declared.checksum !== sha256)
      return { code: 'checksum_mismatch', message: `checksum_sha256: the bytes hash to ${sha256}, not the declared ${declared.checksum}` };
    return this.text ?? { size: this.size, sha256 };
  }
}

/** Reads finished bytes once and measures them (when no measurement followed them as they arrived). */
export async function measure(bytes: Readable, declared: { size: number; checksum: string | null; mimeType: string }): Promise<Verified | Refusal> {
  const measurement = new Measurement(declared.mimeType);
  for await (const chunk of bytes) measurement.update(chunk as Buffer);
  return measurement.verdict(declared);
}

function checkText(decoder: TextDecoder, chunk: Buffer, charset: string, last: boolean): Refusal | null {
  let decoded: string;
  try {
    decoded = decoder.decode(chunk, { stream: !last });
  } catch {
    return { code: 'invalid_text', message: `mime_type: the bytes are not valid ${charset} text` };
  }
  return decoded.includes('\0') ? { code: 'invalid_text', message: 'mime_type: the bytes contain NUL characters: binary, not text' } : null;
}

/** The type finished bytes are kept and served as: the declared one only when it is confirmed. */
export interface Typed {
  mimeType: string;
}

/** Bytes of a declared type the sniffer cannot confirm are kept as this: served as a download, never inline. */
export const UNCONFIRMED_TYPE = 'application/octet-stream';

/**
 * The real type, sniffed from the bytes' signature (`file-type`), against the declared one — a
 * claim, trusted only as far as it is checked. A type with a signature must show it (else refused);
 * a text type may show a text signature (XML, VTT) or none (its bytes were checked to decode as
 * text); any other type the sniffer does not know cannot be confirmed, so the bytes are kept as
 * UNCONFIRMED_TYPE (HTML declared as `video/x-foo` is no video to anyone).
 */
export async function checkType(bytes: Readable, declaredMimeType: string): Promise<Refusal | Typed> {
  const { type } = parseMediaType(declaredMimeType);
  let sniffed: string | undefined;
  try {
    sniffed = (await fileTypeFromStream(bytes))?.mime;
  } finally {
    // Stops reading (an object-storage body answers its abort with an error nobody needs).
    bytes.on('error', () => undefined).destroy();
  }
  if (sniffed && (sameType(type, sniffed) || (textual(type) && textual(sniffed)))) return { mimeType: declaredMimeType };
  if (sniffed) return { code: 'type_mismatch', message: `mime_type: the bytes are ${sniffed}, not the declared ${type}` };
  if (supportedMimeTypes.has(type as never)) return { code: 'type_mismatch', message: `mime_type: the bytes do not start like ${type} (no signature found)` };
  return { mimeType: textual(type) ? declaredMimeType : UNCONFIRMED_TYPE };
}
