/**
 * A `\uD800`-`\uDFFF` escape that is an escape (after an even number of backslashes): what
 * `JSON.stringify()` writes for a lone surrogate, and only for one (a pair is written as it is).
 */
const LONE_SURROGATE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

/** The escape `JSON.stringify()` writes for a NUL character (U+0000), as an escape. */
const NUL = /(?<!\\)(?:\\\\)*\\u0000/;

/**
 * Throws a `TypeError` when `text` (made by `JSON.stringify()`) holds a string that is not
 * well-formed Unicode: a lone surrogate, such as half of an emoji that `slice()` cut. No store can
 * keep one (PostgreSQL's `json` refuses it, utf8mb4 has no code for it), so every store refuses the
 * value before it writes anything, as it refuses a BigInt. The same for a NUL character, which
 * PostgreSQL's JSON functions can't give as text (any payload may reach the journal: a signal's
 * payload, a child's output). Returns `text`.
 */
export function wellFormedJson(text: string, what = 'a value'): string {
  if (text.includes('\\ud') && LONE_SURROGATE.test(text)) {
    const at = LONE_SURROGATE.exec(text)!.index;
    throw new TypeError(
      `${what} can't be stored: it holds a string that is not well-formed Unicode (a lone surrogate, near ` +
        `${text.slice(Math.max(0, at - 20), at + 20)}), which no store keeps. Make the string well-formed first ` +
        "(String.prototype.toWellFormed()), or don't cut strings in the middle of a character.",
    );
  }
  if (text.includes('\\u0000') && NUL.test(text)) {
    const at = NUL.exec(text)!.index;
    throw new TypeError(
      `${what} can't be stored: it holds a NUL character (\\u0000, near ${text.slice(Math.max(0, at - 20), at + 20)}), which ` +
        "PostgreSQL can't read as text out of JSON (a journal entry holding one can't be written there), so no store keeps one. " +
        'Leave it out, or carry binary data encoded (base64).',
    );
  }
  return text;
}
