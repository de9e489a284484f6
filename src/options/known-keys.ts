import { invalidInput } from '../errors/workflow-input-error.js';
/**
 * Throws a `TypeError` when `value` (an options object) has a key outside `known`, naming the key,
 * where it was found (`what`, such as `WorkflowsModule option "worker"`) and the keys that are
 * known. A misspelt option would otherwise be ignored without a word and its default used.
 * Anything that is not a plain object is left to the caller's own checks.
 */
export function checkKnownKeys(value: unknown, known: readonly string[], what: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw invalidInput(`${what}: unknown key "${key}". Known keys: ${known.join(', ')}. Check its spelling.`);
    }
  }
}

/**
 * An optional options argument (`start()`'s, `signal()`'s): refuses anything but a plain object or
 * `undefined` (a `null` would otherwise fail later with a bare "Cannot read properties of null"),
 * then its unknown keys (`checkKnownKeys()`).
 */
export function checkOptions(value: unknown, known: readonly string[], what: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidInput(
      `${what} must be an object (or left out), got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}.`,
    );
  }
  checkKnownKeys(value, known, what);
}
