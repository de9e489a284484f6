import { describe, expect, it } from 'vitest';
import { journalEntryJson, journalJson } from '../../src/storage/journal-entry-json.js';
import type { WorkflowJournalEntry } from '../../src/storage/workflow-instance.js';

const entry = (value: unknown): WorkflowJournalEntry => ({
  name: 's',
  kind: 'step',
  state: 'completed',
  value,
  attempts: 1,
  createdAt: 1,
  updatedAt: 2,
});

describe('journalEntryJson()', () => {
  it('is JSON.stringify() of the entry, and the kept text stays invisible to keys, spreads, JSON and equality', () => {
    const e = entry({ b: 1, a: ['x', null] });
    const text = journalEntryJson(e, true);
    expect(text).toBe(JSON.stringify(entry({ b: 1, a: ['x', null] })));
    expect(journalEntryJson(e)).toBe(text);
    expect(Object.keys(e)).toEqual(['name', 'kind', 'state', 'value', 'attempts', 'createdAt', 'updatedAt']);
    expect(JSON.stringify(e)).toBe(text);
    expect(e).toStrictEqual(entry({ b: 1, a: ['x', null] }));
    // A copy (what a payload codec makes, with another value) has a text of its own.
    const copy = { ...e, value: 'encoded' };
    expect(journalEntryJson(copy)).toBe(JSON.stringify(entry('encoded')));
  });

  it('keeps the text only when asked (the engine): an entry serialized for a store alone is serialized again at each call', () => {
    const e = entry({ n: 1 });
    expect(journalEntryJson(e)).toBe(JSON.stringify(entry({ n: 1 })));
    (e.value as { n: number }).n = 2;
    expect(journalEntryJson(e)).toBe(JSON.stringify(entry({ n: 2 })));
    expect(journalJson([e])).toBe(JSON.stringify([entry({ n: 2 })]));
  });

  it('serializes a frozen entry without keeping anything on it, and throws on what JSON cannot carry', () => {
    const frozen = Object.freeze(entry([1, 2]));
    expect(journalEntryJson(frozen, true)).toBe(JSON.stringify(frozen));
    expect(() => journalEntryJson(entry(10n))).toThrow(TypeError);
  });

  it('joins entries into one JSON array', () => {
    const entries = [entry(1), entry('two'), entry({ three: 3 })];
    expect(journalJson(entries)).toBe(JSON.stringify(entries));
    expect(journalJson(entries.slice(0, 1))).toBe(JSON.stringify(entries.slice(0, 1)));
    expect(journalJson([])).toBe('[]');
  });
});
