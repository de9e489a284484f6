/** Everything an `InMemoryWorkflowStore` holds (its own records, private fields included), as text. */
export function dumpInMemoryStore(store: object): string {
  return JSON.stringify(store, (_key, value: unknown) =>
    value instanceof Map ? [...value.entries()] : value instanceof Set ? [...value] : value,
  );
}
