/**
 * `value` as an error message shows it: a string quoted (so `"ten"` reads as the text it is, and
 * `""` is visible), a number, boolean, `null` or `undefined` as written, anything else as short
 * JSON or by its kind.
 */
export function shownValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'bigint':
      return `${value}n`;
    case 'function':
      return 'a function';
    case 'symbol':
      return value.toString();
    case 'object':
      if (value === null) return 'null';
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : value.toISOString();
      try {
        const json = JSON.stringify(value);
        if (json !== undefined) return json.length > 80 ? `${json.slice(0, 77)}...` : json;
      } catch {
        // A cycle, a BigInt inside: shown by its kind below.
      }
      return Array.isArray(value) ? 'an array' : 'an object';
    default:
      return String(value);
  }
}
