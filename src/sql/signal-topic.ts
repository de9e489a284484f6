import type { WorkflowWait } from '../storage/workflow-instance.js';

/**
 * A signal's name and key as one indexable string: what a wait matches on. `name` and an exact
 * `key`, where a missing key (`null`) is not the empty string. Length-prefixed rather than escaped
 * (`5:order=a1`, `5:order!` without a key), so it is unambiguous and never longer than name + key +
 * a few characters: it stays well inside an index entry's size limit for keys at their limits.
 */
export function signalTopic(name: string, key: string | null): string {
  return key === null ? `${name.length}:${name}!` : `${name.length}:${name}=${key}`;
}

/** The wait a topic stands for (the inverse of `signalTopic()`). */
export function parseSignalTopic(topic: string): WorkflowWait {
  const colon = topic.indexOf(':');
  const length = Number(topic.slice(0, colon));
  const name = topic.slice(colon + 1, colon + 1 + length);
  const rest = topic.slice(colon + 1 + length);
  return { name, key: rest === '!' ? null : rest.slice(1) };
}
