/**
 * Checks that `value` is a JSON value the store can keep and hands back a copy of it as JSON
 * would carry it (so a replay sees exactly what the first run saw). Throws a `TypeError` that
 * names `what` and the path of the first value JSON cannot carry: a function, a symbol, a
 * BigInt, a cycle, `NaN` or an infinite number. `undefined` at the top is allowed (it reads back
 * as `undefined`); inside objects it is dropped and inside arrays it becomes `null`, as JSON does.
 */
export function toJsonValue(value: unknown, what: string): unknown {
  if (value === undefined) return undefined;
  check(value, what, '', new Set());
  return JSON.parse(JSON.stringify(value));
}

function check(value: unknown, what: string, path: string, seen: Set<object>): void {
  const where = path ? ` at ${path}` : '';
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${what} is not a JSON value: ${value}${where}. Use a finite number or null.`);
      return;
    case 'bigint':
      throw new TypeError(`${what} is not a JSON value: a BigInt${where}. Convert it to a string or number first.`);
    case 'function':
    case 'symbol':
      throw new TypeError(`${what} is not a JSON value: a ${typeof value}${where}. Return plain data (objects, arrays, strings, numbers, booleans, null).`);
  }
  if (value === null) return;
  const object = value as Record<string, unknown>;
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') return; // Dates and the like serialize themselves
  if (seen.has(object)) throw new TypeError(`${what} is not a JSON value: it contains a cycle${where}. Return a tree of plain data.`);
  seen.add(object);
  if (Array.isArray(object)) object.forEach((item, index) => check(item, what, `${path}[${index}]`, seen));
  else for (const [key, item] of Object.entries(object)) check(item, what, path ? `${path}.${key}` : key, seen);
  seen.delete(object);
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
