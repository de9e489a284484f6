/** Whether `value` is an object whose `methods` are all functions: a driver's object, as far as the store uses it. */
export function hasMethods(value: unknown, ...methods: string[]): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function')
  );
}

/**
 * What `value` is, for a message that names what was expected instead: `null`, its type, its
 * class (`a Client`), or an object without the `methods` the driver's object has.
 */
export function describeDriverObject(value: unknown, methods: readonly string[]): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  const name = (value as object).constructor?.name;
  return name && name !== 'Object' ? `a ${name}` : `an object without ${methods.map((m) => `${m}()`).join(' and ')}`;
}
