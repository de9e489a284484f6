import type { OperationHost } from './execution-host.js';

/**
 * `ctx.now()`, `ctx.random()` and `ctx.uuid()`: made once and journaled (as `$now:1`, `$random:2`...
 * in call order), so every replay sees the same value.
 */
export class RecordedValues {
  private counter = 0;

  constructor(private readonly host: OperationHost) {}

  /** The value journaled for this call, or `make()`'s, recorded. */
  value(kind: 'now' | 'random' | 'uuid', make: () => unknown): unknown {
    const { host } = this;
    const name = `$${kind}:${++this.counter}`;
    host.admitOperation(name, 'value', true);
    const entry = host.journalEntry(name);
    if (entry) return entry.value;
    const at = host.now();
    const value = make();
    host.record({ name, kind: 'value', state: 'completed', value, createdAt: at, updatedAt: at });
    return value;
  }
}
