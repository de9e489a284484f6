import { invalidInput } from '../errors/workflow-input-error.js';
/**
 * Checks that `value` is a JSON value the store can keep and hands back a copy of it as JSON
 * would carry it, so the code sees on the first run exactly what a replay reads back from storage.
 *
 * What passes: strings, finite numbers, booleans, `null`, arrays, plain objects (made by `{}`,
 * `Object.create(null)` or `JSON.parse`), and any object with a `toJSON()` method, which is stored
 * as what that method returns (checked the same way): a `Date` is stored, and so read back, as
 * its ISO string. `undefined` at the top is allowed (it reads back as `undefined`); inside objects
 * it is dropped and inside arrays it becomes `null`, as JSON does.
 *
 * What fails, with a `TypeError` that names `what` and the path of the first bad value from `root`
 * (`input.items`, `result[2].at`): a function, a symbol, a BigInt, a cycle, `NaN`, an infinite
 * number, and any other object (a `Map`, a `Set`, a class instance, a typed array...), which JSON
 * would silently store as `{}`.
 */
export function toJsonValue(value: unknown, what: string, root = 'value'): unknown {
  if (value === undefined) return undefined;
  check(value, what, root, new Set(), '');
  return JSON.parse(JSON.stringify(value));
}

const PLAIN_DATA = 'Return plain data (objects, arrays, strings, numbers, booleans, null).';

function check(value: unknown, what: string, path: string, seen: Set<object>, key: string): void {
  const fail = (found: string, fix: string): never => {
    throw invalidInput(`${what} is not a JSON value: ${found} at ${path}. ${fix}`);
  };
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return;
    case 'number':
      if (!Number.isFinite(value)) fail(String(value), 'Use a finite number or null.');
      return;
    case 'bigint':
      return fail('a BigInt', 'Convert it to a string or number first.');
    case 'function':
    case 'symbol':
      return fail(`a ${typeof value}`, PLAIN_DATA);
  }
  if (value === null) return;
  const object = value as Record<string, unknown>;
  if (seen.has(object)) fail('a cycle', 'Return a tree of plain data.');
  if (typeof object.toJSON === 'function') {
    // Stored as what toJSON() returns (a Date as its ISO string): check that instead.
    const replaced = (object.toJSON as (key: string) => unknown)(key);
    if (replaced === object) fail('an object whose toJSON() returns itself', PLAIN_DATA);
    seen.add(object);
    check(replaced, what, path, seen, key);
    seen.delete(object);
    return;
  }
  if (!Array.isArray(object)) {
    const prototype = Object.getPrototypeOf(object) as object | null;
    if (prototype !== null && prototype !== Object.prototype) {
      if (object instanceof Map) fail('a Map', 'Convert it to a plain object or an array of pairs first (Object.fromEntries(map) or [...map]).');
      if (object instanceof Set) fail('a Set', 'Convert it to an array first ([...set]).');
      const name = (prototype.constructor as { name?: string } | undefined)?.name;
      fail(
        name ? `an instance of ${name}` : 'an object that is not a plain object',
        `It would read back as a plain object, without its class. Pass plain data instead (spread a DTO: { ...dto }), or give the class a toJSON() method.`,
      );
    }
  }
  seen.add(object);
  if (Array.isArray(object)) object.forEach((item, index) => check(item, what, `${path}[${index}]`, seen, String(index)));
  else for (const [name, item] of Object.entries(object)) check(item, what, `${path}${propertyPath(name)}`, seen, name);
  seen.delete(object);
}

function propertyPath(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
}

/** Compares two values as JSON values (key order ignored). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  ) ?? 'undefined';
}
