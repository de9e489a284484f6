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
 * number, a string or key that is not well-formed Unicode (a lone surrogate, which no store keeps) or
 * that holds a NUL character (which PostgreSQL can't read out of JSON), and any other object (a `Map`, a `Set`, a class instance, a typed array...), which JSON
 * would silently store as `{}`.
 */
export function toJsonValue(value: unknown, what: string, root = 'value'): unknown {
  if (value === undefined) return undefined;
  return copy(value, { what, root, path: [], seen: null }, '');
}

const PLAIN_DATA = 'Use plain data (objects, arrays, strings, numbers, booleans, null).';
const WELL_FORMED =
  "No store keeps one: make the string well-formed first (String.prototype.toWellFormed()), or don't cut strings in the middle of a character.";
const NO_NUL =
  'No store keeps one (PostgreSQL reads none out of JSON): leave it out, or carry binary data encoded (base64).';

/** Whether `text` has no lone surrogate (`String.prototype.isWellFormed()`, Node 20). */
function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * One check's state. The path to the value being checked is kept as its keys (pushed and popped
 * on the way down) and made a string only for the error: most values pass, and building a path
 * string for every property of every value they hold cost more than the rest of the check.
 */
interface Walk {
  what: string;
  root: string;
  path: Array<string | number>;
  /** The objects on the way down (cycles); made at the first object. */
  seen: Set<object> | null;
}

/**
 * Checks `value` (reached under `key`) and returns its copy as a JSON round trip would give it, in
 * one walk that reads each property once: `undefined` where JSON drops the value (the caller leaves
 * the property out, or writes `null` in an array), `-0` as `0`, what `toJSON()` returns in place of
 * the object, a `__proto__` key as an own property.
 */
function copy(value: unknown, walk: Walk, key: string): unknown {
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) fail(walk, 'a string that is not well-formed Unicode (a lone surrogate)', WELL_FORMED);
      if (value.includes('\u0000')) fail(walk, 'a string holding a NUL character (\\u0000)', NO_NUL);
      return value;
    case 'boolean':
    case 'undefined':
      return value;
    case 'number':
      if (!Number.isFinite(value)) fail(walk, String(value), 'Use a finite number or null.');
      return value === 0 ? 0 : value;
    case 'bigint':
      return fail(walk, 'a BigInt', 'Convert it to a string or number first.');
    case 'function':
    case 'symbol':
      return fail(walk, `a ${typeof value}`, PLAIN_DATA);
  }
  if (value === null) return null;
  const object = value as Record<string, unknown>;
  const seen = (walk.seen ??= new Set());
  if (seen.has(object)) fail(walk, 'a cycle', 'Use a tree of plain data.');
  let out: unknown;
  seen.add(object);
  if (typeof object.toJSON === 'function') {
    // Stored as what toJSON() returns (a Date as its ISO string): check and copy that instead.
    const replaced = (object.toJSON as (key: string) => unknown)(key);
    if (replaced === object) fail(walk, 'an object whose toJSON() returns itself', PLAIN_DATA);
    out = copy(replaced, walk, key);
  } else if (Array.isArray(object)) {
    const { path } = walk;
    const array: unknown[] = new Array(object.length);
    for (let index = 0; index < object.length; index++) {
      path.push(index);
      // A hole, or a value JSON drops, is null in an array.
      array[index] = index in object ? (copy(object[index], walk, String(index)) ?? null) : null;
      path.pop();
    }
    out = array;
  } else {
    const prototype = Object.getPrototypeOf(object) as object | null;
    if (prototype !== null && prototype !== Object.prototype) refuseClass(walk, object, prototype);
    const { path } = walk;
    const plain: Record<string, unknown> = {};
    for (const name in object) {
      if (!Object.prototype.hasOwnProperty.call(object, name)) continue;
      path.push(name);
      if (!isWellFormed(name)) fail(walk, 'a key that is not well-formed Unicode (a lone surrogate)', WELL_FORMED);
      if (name.includes('\u0000')) fail(walk, 'a key holding a NUL character (\\u0000)', NO_NUL);
      const item = copy(object[name], walk, name);
      path.pop();
      if (item === undefined) continue;
      if (name === '__proto__')
        Object.defineProperty(plain, name, { value: item, enumerable: true, writable: true, configurable: true });
      else plain[name] = item;
    }
    out = plain;
  }
  seen.delete(object);
  return out;
}

function refuseClass(walk: Walk, object: object, prototype: object): never {
  if (object instanceof Map)
    fail(
      walk,
      'a Map',
      'Convert it to a plain object or an array of pairs first (Object.fromEntries(map) or [...map]).',
    );
  if (object instanceof Set) fail(walk, 'a Set', 'Convert it to an array first ([...set]).');
  const name = (prototype.constructor as { name?: string } | undefined)?.name;
  return fail(
    walk,
    name ? `an instance of ${name}` : 'an object that is not a plain object',
    `It would read back as a plain object, without its class. Pass plain data instead (spread a DTO: { ...dto }), or give the class a toJSON() method.`,
  );
}

function fail(walk: Walk, found: string, fix: string): never {
  let at = walk.root;
  for (const key of walk.path) at += typeof key === 'number' ? `[${key}]` : propertyPath(key);
  throw invalidInput(`${walk.what} is not a JSON value: ${found} at ${at}. ${fix}`);
}

function propertyPath(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
}

/** Compares two values as JSON values (key order ignored). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  return (
    JSON.stringify(value, (_key, item: unknown) =>
      item && typeof item === 'object' && !Array.isArray(item)
        ? Object.fromEntries(
            Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
          )
        : item,
    ) ?? 'undefined'
  );
}
