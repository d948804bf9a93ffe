// What reaches the operator's terminal. Titles, errors, reasons and payloads are tenants' (or
// upstreams') text: a raw ESC can clear the screen, rewrite earlier lines or set the window title, a
// C1 CSI does the same on some terminals, and a bidi override makes `evil.txt` read as `txt.live`.

/**
 * C0 controls but newline and tab, DEL, C1 controls, the bidi embeddings, overrides, isolates and
 * marks, and the Unicode line and paragraph separators.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * The text with every unsafe character shown as its `\uXXXX` escape (ESC [2J prints as
 * `\u001b[2J`): visible, unambiguous, and inside a JSON string the same character once parsed, so
 * `--json` output stays valid JSON meaning what the API answered.
 */
export const visible = (text: string): string => text.replace(UNSAFE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** A stream that shows every text written to it through `visible`: the one place all CLI output passes. */
export const terminalSafe = (stream: { write(text: string): unknown }) => ({ write: (text: string) => stream.write(visible(text)) });
